// Shared pieces of the attention paths (not part of the public kernels API).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention.h"

namespace keel::kernels::detail {

// Visible key positions [lo, hi] of a query at pos (lo > hi: none).
struct KeyRange {
  int64_t lo = 0, hi = -1;
  bool empty() const { return lo > hi; }
};
KeyRange visible_keys(const kv::KvLayerView& v, int64_t pos);

// Pointer to the f32 K (or V) row of key position p, kv head h: directly into the page for
// f32, else dequantized into scratch. nullptr when the page is not held.
const float* k_row(const kv::KvLayerView& v, int64_t p, int64_t h, float* scratch);
const float* v_row(const kv::KvLayerView& v, int64_t p, int64_t h, float* scratch);

struct PreparedQuery;

// One (query row, kv head) unit of work: the `group` query heads sharing kv head `kvh`.
struct HeadGroupTask {
  const kv::KvLayerView* view;
  const float* q;  // first query head of the group, heads contiguous (head_dim_k apart)
  float* out;      // first output head of the group (head_dim_v apart)
  int64_t kvh;
  int64_t group;
  int64_t first_head;  // index of the group's first query head (for sinks)
  KeyRange keys;
  // The group's query in the tile kernels' forms, made once (prepare_query) and shared by
  // every segment of the task; nullptr: each flash_partial call makes its own. Not owned.
  const PreparedQuery* prepared = nullptr;
};

// A task's query as the flash tile kernels read it (attention_flash.h, step 1): the
// zero-padded f32 copy and, for q8_0 K, the per-32 codes, scales and code sums. Depends
// only on the query, so one preparation serves all of a task's segments.
struct PreparedQuery {
  std::vector<float> q;       // [group][pad16(dk)]
  std::vector<int8_t> qq;     // q8_0 K: [group][dk]
  std::vector<float> qd;      // q8_0 K: [group][dk / 32]
  std::vector<int32_t> qsum;  // q8_0 K: [group][dk / 32]
};
void prepare_query(const HeadGroupTask& t, PreparedQuery& out);

float score(const float* q, const float* k, int64_t d, const AttentionParams& p);

// Fill t.out ([group][head_dim_v]); return false (and write zeros) when no key was held.
bool attend_plain(const HeadGroupTask& t, const AttentionParams& p);
bool attend_flash(const HeadGroupTask& t, const AttentionParams& p);

// attend_flash in two steps (attention_flash.h: segments), so the segments of one task can
// run on different threads with the same bits: flash_partial() computes, for each of tasks
// [0, n) (the same query row and view, e.g. its kv heads), the segment that starts at seg_lo
// (a multiple of flash_segment_span) into partials[i] ([flash_partial_floats]) and returns
// whether a page of it was held; one call over a row's kv heads reads each page once.
// flash_fold_finish()
// folds a task's n partials (ascending seg_lo; overwritten) and fills t.out as attend_flash.
int64_t flash_segment_span(const kv::KvLayerView& v);
// Asks for the token rows (every kv head, K and V) of keys [lo, hi] to be brought into L2:
// a hint, issued a unit of work ahead (a page ahead is too close to hide DRAM latency).
void flash_prefetch(const kv::KvLayerView& v, int64_t lo, int64_t hi);
size_t flash_partial_floats(int64_t group, int64_t dv);
bool flash_partial(const HeadGroupTask* tasks, int64_t n, const AttentionParams& p, int64_t seg_lo,
                   float* const* partials);
bool flash_fold_finish(const HeadGroupTask& t, const AttentionParams& p, float* partials,
                       const char* held, int64_t n);

}  // namespace keel::kernels::detail
