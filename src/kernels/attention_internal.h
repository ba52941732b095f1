// Shared pieces of the attention paths (not part of the public kernels API).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_flash.h"

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
// zero-padded f32 copy and, for q8_0 K, the blocks quantized per 32. Depends only on the
// query, so one preparation serves all of a task's segments.
struct PreparedQuery {
  std::vector<float> q;                  // [group][pad16(dk)]
  std::vector<Q8QueryBlock> qblocks;     // q8_0 K: [dk / 32][group]
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

// attend_flash for tasks[0, n): query rows of one view and one kv head (consecutive rows of
// a prefill batch), segment by segment, ascending. Each segment's K is widened once into
// an element-major copy (FlashPage::k_major) that every row's tile reads, and each row's
// segments are folded as they come (the order attend_flash folds them in). had[i]: whether
// task i saw a held key. Same bits as attend_flash on each task.
void attend_flash_rows(const HeadGroupTask* tasks, int64_t n, const AttentionParams& p, bool* had);
// Whether attend_flash_rows has a faster path than attend_flash for rows of view `v` on
// this machine (the AVX-512 kernel, f32 / f16 / bf16 K rows, head_dim_k % 16 == 0).
bool flash_rows_pay(const kv::KvLayerView& v);
// Asks for the token rows (every kv head, K and V) of keys [lo, hi] to be brought into L2
// at once: a hint, for a thread's first unit (KvPrefetch paces the later ones a unit ahead;
// a page ahead is too close to hide DRAM latency).
void flash_prefetch(const kv::KvLayerView& v, int64_t lo, int64_t hi);

// The same rows, asked for in installments: a thread plans its next unit's rows and issues
// a share of them at each page of its current unit, so the reads overlap the arithmetic
// instead of arriving as one burst that stalls the core. A hint: never read for results.
class KvPrefetch {
 public:
  // Plans keys [lo, hi] of `v` (at most one segment); drops what was left of an earlier plan.
  void plan(const kv::KvLayerView& v, int64_t lo, int64_t hi);
  // Issues the planned lines up to the fraction num / den of them (num <= den).
  void issue_until(int64_t num, int64_t den);

 private:
  struct Run {
    const char* first = nullptr;
    int64_t lines = 0;
  };
  static constexpr int kMaxRuns = 16;  // K and V of the 8 pages of a segment
  Run runs_[kMaxRuns];
  int n_runs_ = 0, run_ = 0;
  int64_t total_ = 0, issued_ = 0, in_run_ = 0;
};

size_t flash_partial_floats(int64_t group, int64_t dv);
// `next` (may be null): the thread's next unit, issued in installments over this call's pages.
bool flash_partial(const HeadGroupTask* tasks, int64_t n, const AttentionParams& p, int64_t seg_lo,
                   float* const* partials, KvPrefetch* next = nullptr);
bool flash_fold_finish(const HeadGroupTask& t, const AttentionParams& p, float* partials,
                       const char* held, int64_t n);

}  // namespace keel::kernels::detail
