#include "kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/attention_internal.h"
#include "kernels/dot.h"
#include "kernels/widen.h"
#include "tensor/q8_tile.h"

namespace keel::kernels {

namespace {
std::atomic<uint64_t> g_empty_rows{0};

void check_view(const kv::KvLayerView& v, const AttentionParams& p) {
  if (v.n_kv_heads <= 0 || p.n_head <= 0 || p.n_head % v.n_kv_heads != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "attention: n_head " + std::to_string(p.n_head) +
                    " is not a positive multiple of n_kv_heads " + std::to_string(v.n_kv_heads));
  }
  if (v.page_tokens <= 0 || v.head_dim_k <= 0 || v.head_dim_v <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "attention: malformed KV view (page_tokens " +
                                                 std::to_string(v.page_tokens) + ")");
  }
}
}  // namespace

uint64_t empty_attention_rows() { return g_empty_rows.load(std::memory_order_relaxed); }

namespace detail {

KeyRange visible_keys(const kv::KvLayerView& v, int64_t pos) {
  KeyRange r;
  r.hi = std::min(pos, v.n_positions - 1);
  r.lo = std::max<int64_t>(0, v.first_held);
  if (v.window > 0) r.lo = std::max(r.lo, pos - v.window + 1);
  return r;
}

namespace {
const float* row_at(const std::vector<const uint8_t*>& pages, tensor::DType type, int32_t pt,
                    size_t token_stride, size_t head_bytes, int64_t d, int64_t p, int64_t h,
                    float* scratch) {
  const size_t page = static_cast<size_t>(p / pt);
  if (page >= pages.size() || pages[page] == nullptr) return nullptr;
  const uint8_t* src = pages[page] + static_cast<size_t>(p % pt) * token_stride +
                       static_cast<size_t>(h) * head_bytes;
  if (type == tensor::DType::kF32) return reinterpret_cast<const float*>(src);
  widen_row(type, src, scratch, d);  // tensor::dequantize_row's values, SIMD where it can
  return scratch;
}

// A row of a q8_0 tile page (kv::KvLayerView::k_tiles / v_pairs), dequantized.
const float* tile_row_at(const std::vector<const uint8_t*>& pages, const tensor::q8_tile::Shape& shape,
                         size_t head_bytes, int64_t p, int64_t h, float* scratch) {
  const size_t page = static_cast<size_t>(p / shape.n);
  if (page >= pages.size() || pages[page] == nullptr) return nullptr;
  tensor::q8_tile::read_row(pages[page] + static_cast<size_t>(h) * head_bytes, shape, p % shape.n, scratch);
  return scratch;
}

}  // namespace

const float* k_row(const kv::KvLayerView& v, int64_t p, int64_t h, float* scratch) {
  if (v.k_tiles) {
    return tile_row_at(v.k_pages, tensor::q8_tile::key_groups(v.page_tokens, v.head_dim_k), v.k_head_bytes, p, h,
                       scratch);
  }
  return row_at(v.k_pages, v.k_type, v.page_tokens, v.k_token_stride, v.k_head_bytes,
                v.head_dim_k, p, h, scratch);
}

const float* v_row(const kv::KvLayerView& v, int64_t p, int64_t h, float* scratch) {
  if (v.v_pairs) {
    return tile_row_at(v.v_pages, tensor::q8_tile::value_pairs(v.page_tokens, v.head_dim_v), v.v_head_bytes, p, h,
                       scratch);
  }
  return row_at(v.v_pages, v.v_type, v.page_tokens, v.v_token_stride, v.v_head_bytes,
                v.head_dim_v, p, h, scratch);
}

float score(const float* q, const float* k, int64_t d, const AttentionParams& p) {
  float s = dot_f32(q, k, d) * p.scale;
  if (p.softcap > 0.0f) s = p.softcap * std::tanh(s / p.softcap);
  return s;
}

}  // namespace detail

namespace {

// Few (row, kv head) tasks (decode): their flash segments become the units of work, so
// every core gets some even for one row; folding the segments in order after the parallel
// part gives the bits attend_flash gives (attention_flash.h: segments).
template <class TaskFn, class CountFn>
void attend_flash_split(const kv::KvLayerView* const* views, const std::vector<detail::KeyRange>& ranges,
                        int64_t n_kv, const AttentionParams& params, const TaskFn& task,
                        const CountFn& count_empty, ThreadPool& pool) {
  struct Segment {
    int64_t r, kvh, seg_lo;
  };
  // The caller's buffers, named by reference: inside the workers' lambda a thread_local
  // name would mean the worker's own (empty) copy.
  thread_local std::vector<Segment> segs_buf;
  thread_local std::vector<float> partials_buf;
  thread_local std::vector<char> held_buf;
  thread_local std::vector<detail::PreparedQuery> queries_buf;  // [row][kv head]
  std::vector<Segment>& segs = segs_buf;
  std::vector<detail::PreparedQuery>& queries = queries_buf;
  std::vector<float>& partials = partials_buf;
  std::vector<char>& held = held_buf;
  segs.clear();
  for (size_t r = 0; r < ranges.size(); ++r) {
    if (ranges[r].empty()) continue;
    const int64_t span = detail::flash_segment_span(*views[r]);
    for (int64_t kvh = 0; kvh < n_kv; ++kvh)
      for (int64_t lo = ranges[r].lo / span * span; lo <= ranges[r].hi; lo += span)
        segs.push_back({static_cast<int64_t>(r), kvh, lo});
  }
  if (segs.empty()) return;
  // Each task's query once, not once per segment (few tasks: a decode step).
  if (queries.size() < ranges.size() * static_cast<size_t>(n_kv)) queries.resize(ranges.size() * static_cast<size_t>(n_kv));
  for (size_t r = 0; r < ranges.size(); ++r) {
    if (ranges[r].empty()) continue;
    for (int64_t kvh = 0; kvh < n_kv; ++kvh) detail::prepare_query(task(static_cast<int64_t>(r), kvh), queries[r * n_kv + kvh]);
  }
  const size_t pf = detail::flash_partial_floats(params.n_head / n_kv, views[0]->head_dim_v);
  partials.resize(segs.size() * pf);
  held.resize(segs.size());
  // A unit of work is one segment of one row with a run of its kv heads (flash_partial
  // reads each page once for all of them). The atoms (row, segment, kv head), segment-major,
  // are cut into one contiguous part per thread of near-equal key count, and a cut may fall
  // between the kv heads of a segment: whole segments per thread left one thread a whole
  // unit longer whenever the segment count was odd (17 at depth 4096: 9 against 8). Each
  // atom's partial is the same whichever unit computes it, so the cut never changes bits.
  // segs stays in fold order (row, kv head, segment): kv head h of a unit is
  // segs[first + h * stride], stride = the row's segments per kv head.
  struct Unit {
    int64_t first, stride, kvh0, kvh1;
  };
  auto seg_keys = [&](const Segment& sg) {
    const detail::KeyRange& kr = ranges[sg.r];
    const int64_t span = detail::flash_segment_span(*views[sg.r]);
    return std::min(kr.hi, sg.seg_lo + span - 1) - std::max(kr.lo, sg.seg_lo) + 1;
  };
  int64_t total_keys = 0;
  for (const Segment& sg : segs) total_keys += seg_keys(sg);
  const int64_t n_parts = pool.size();
  thread_local std::vector<Unit> units_buf;
  thread_local std::vector<int64_t> part_first_buf;  // [n_parts + 1]: each part's first unit
  std::vector<Unit>& units = units_buf;
  std::vector<int64_t>& part_first = part_first_buf;
  units.clear();
  part_first.assign(static_cast<size_t>(n_parts + 1), -1);
  int64_t keys_before = 0, last_part = -1;
  for (size_t i = 0; i < segs.size();) {
    size_t e = i;
    while (e < segs.size() && segs[e].r == segs[i].r) ++e;  // [i, e): the row's segments
    const int64_t per_head = static_cast<int64_t>(e - i) / n_kv;
    for (int64_t s = 0; s < per_head; ++s) {
      const int64_t first = static_cast<int64_t>(i) + s, keys = seg_keys(segs[first]);
      for (int64_t kvh = 0; kvh < n_kv; ++kvh) {
        // The part whose share of the keys holds this atom's midpoint.
        const int64_t part = std::min(n_parts - 1, (2 * keys_before + keys) * n_parts / (2 * total_keys));
        keys_before += keys;
        if (part != last_part || kvh == 0) {
          units.push_back({first, per_head, kvh, kvh + 1});
          for (int64_t q = last_part + 1; q <= part; ++q) part_first[q] = static_cast<int64_t>(units.size()) - 1;
          last_part = part;
        } else {
          units.back().kvh1 = kvh + 1;
        }
      }
    }
    i = e;
  }
  const int64_t n_units = static_cast<int64_t>(units.size());
  for (int64_t q = last_part + 1; q <= n_parts; ++q) part_first[q] = n_units;
  // Each thread runs its part's units in order, so it knows its next unit and asks for that
  // unit's pages while it works on the current one.
  struct UnitKeys {
    const kv::KvLayerView* view;
    int64_t lo, hi;
  };
  auto unit_keys = [&](int64_t u) {
    const Segment& sg = segs[units[u].first];
    const detail::KeyRange& kr = ranges[sg.r];
    const int64_t span = detail::flash_segment_span(*views[sg.r]);
    return UnitKeys{views[sg.r], std::max(kr.lo, sg.seg_lo), std::min(kr.hi, sg.seg_lo + span - 1)};
  };
  pool.parallel_for(n_parts, 1, [&](int64_t part_begin, int64_t part_end) {
    const int64_t begin = part_first[part_begin], end = part_first[part_end];
    thread_local std::vector<detail::HeadGroupTask> tasks;
    thread_local std::vector<float*> outs;
    thread_local detail::KvPrefetch next_unit;
    if (begin < end) {  // nothing to overlap the first unit's reads with: ask at once
      const auto [view, lo, hi] = unit_keys(begin);
      detail::flash_prefetch(*view, lo, hi);
    }
    for (int64_t u = begin; u < end; ++u) {
      // The next unit's rows in installments over this unit's pages (a burst of a whole
      // unit stalled the core: 481-562 vs 410-501 us per layer, DRAM-resident bench).
      detail::KvPrefetch* next = nullptr;
      if (u + 1 < end) {
        const auto [view, lo, hi] = unit_keys(u + 1);
        next_unit.plan(*view, lo, hi);
        next = &next_unit;
      }
      const Unit& unit = units[u];
      const Segment& first = segs[unit.first];
      tasks.clear();
      outs.clear();
      for (int64_t kvh = unit.kvh0; kvh < unit.kvh1; ++kvh) {
        tasks.push_back(task(first.r, kvh));
        tasks.back().prepared = &queries[static_cast<size_t>(first.r * n_kv + kvh)];
        outs.push_back(&partials[static_cast<size_t>(unit.first + kvh * unit.stride) * pf]);
      }
      const char h = detail::flash_partial(tasks.data(), unit.kvh1 - unit.kvh0, params, first.seg_lo, outs.data(), next);
      for (int64_t kvh = unit.kvh0; kvh < unit.kvh1; ++kvh) held[unit.first + kvh * unit.stride] = h;
    }
  });
  for (size_t i = 0; i < segs.size();) {  // fold each task's run of segments
    size_t e = i + 1;
    while (e < segs.size() && segs[e].r == segs[i].r && segs[e].kvh == segs[i].kvh) ++e;
    const bool had = detail::flash_fold_finish(task(segs[i].r, segs[i].kvh), params, &partials[i * pf],
                                               &held[i], static_cast<int64_t>(e - i));
    count_empty(had, segs[i].kvh);
    i = e;
  }
}

}  // namespace

void attention(const float* q, const int64_t* pos, const kv::KvLayerView* const* views,
               int64_t n_q, const AttentionParams& params, float* out, ThreadPool* pool) {
  if (n_q <= 0) return;
  // Validate every view first so no work starts on bad input.
  for (int64_t r = 0; r < n_q; ++r) {
    if (!views[r]) throw Error(ErrorCode::kInvalidArgument, "attention: null KV view");
    check_view(*views[r], params);
    if (views[r]->head_dim_k != views[0]->head_dim_k ||
        views[r]->head_dim_v != views[0]->head_dim_v ||
        views[r]->n_kv_heads != views[0]->n_kv_heads) {
      throw Error(ErrorCode::kInvalidArgument, "attention: views of one call differ in shape");
    }
  }
  const kv::KvLayerView& v0 = *views[0];
  const int64_t n_kv = v0.n_kv_heads, group = params.n_head / n_kv;
  const int64_t dk = v0.head_dim_k, dv = v0.head_dim_v;
  const int64_t q_stride = params.n_head * dk, o_stride = params.n_head * dv;

  // The caller's buffer, named by reference (see attend_flash_split); reused across calls.
  thread_local std::vector<detail::KeyRange> ranges_buf;
  std::vector<detail::KeyRange>& ranges = ranges_buf;
  ranges.assign(static_cast<size_t>(n_q), detail::KeyRange{});
  for (int64_t r = 0; r < n_q; ++r) {
    ranges[r] = detail::visible_keys(*views[r], pos[r]);
    if (ranges[r].empty()) {
      // Defined result for a fully masked row: zeros, counted, never an assert.
      g_empty_rows.fetch_add(1, std::memory_order_relaxed);
      std::memset(out + r * o_stride, 0, sizeof(float) * static_cast<size_t>(o_stride));
    }
  }

  auto task = [&](int64_t r, int64_t kvh) {
    return detail::HeadGroupTask{views[r], q + r * q_stride + kvh * group * dk,
                                 out + r * o_stride + kvh * group * dv, kvh, group, kvh * group,
                                 ranges[r]};
  };
  // Every kv head of a row sees the same pages: count an empty row once.
  auto count_empty = [](bool had_keys, int64_t kvh) {
    if (!had_keys && kvh == 0) g_empty_rows.fetch_add(1, std::memory_order_relaxed);
  };
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = i / n_kv, kvh = i % n_kv;
      if (ranges[r].empty()) continue;
      const detail::HeadGroupTask t = task(r, kvh);
      count_empty(params.flash ? detail::attend_flash(t, params) : detail::attend_plain(t, params), kvh);
    }
  };
  // Prefill rows whose K the AVX-512 kernel can read element-major: blocks of up to
  // kRowBlock consecutive rows of one view share each segment's widened copy, a block and a
  // kv head to a task (attend_flash_rows; the same bits as one row at a time). A block of
  // fewer than kMinBlock rows (decode rows of a mixed batch) would not repay the copy: its
  // rows run alone.
  constexpr int64_t kRowBlock = 32, kMinBlock = 4;
  thread_local std::vector<int64_t> blocks_buf;  // first row of each block, then n_q
  std::vector<int64_t>& blocks = blocks_buf;
  blocks.clear();
  if (params.flash && n_q >= kMinBlock && detail::flash_rows_pay(v0)) {
    bool any_block = false;
    for (int64_t r = 0; r <= n_q; ++r) {
      const bool starts = blocks.empty() || r == n_q || r - blocks.back() == kRowBlock || views[r] != views[blocks.back()];
      if (!starts) continue;
      if (!blocks.empty() && r - blocks.back() >= kMinBlock) any_block = true;
      blocks.push_back(r);
    }
    if (!any_block) blocks.clear();
  }
  auto run_blocks = [&](int64_t begin, int64_t end) {
    thread_local std::vector<detail::HeadGroupTask> tasks;
    bool had[kRowBlock];
    const int64_t n_blocks = static_cast<int64_t>(blocks.size()) - 1;
    for (int64_t i = begin; i < end; ++i) {
      // Last blocks first: a prompt's later rows see more keys, and the pool hands out
      // items in order, so the long ones start early and the short ones fill in at the end.
      const int64_t b = n_blocks - 1 - i / n_kv, kvh = i % n_kv;
      tasks.clear();
      for (int64_t r = blocks[b]; r < blocks[b + 1]; ++r)
        if (!ranges[r].empty()) tasks.push_back(task(r, kvh));
      if (blocks[b + 1] - blocks[b] >= kMinBlock) {
        detail::attend_flash_rows(tasks.data(), static_cast<int64_t>(tasks.size()), params, had);
        for (size_t k = 0; k < tasks.size(); ++k) count_empty(had[k], kvh);
      } else {
        for (const detail::HeadGroupTask& t : tasks) count_empty(detail::attend_flash(t, params), kvh);
      }
    }
  };
  // Small jobs run inline (waking workers costs more); where work runs never changes its
  // order, so results are unaffected.
  int64_t work = 0;
  for (int64_t r = 0; r < n_q; ++r) {
    if (!ranges[r].empty()) work += (ranges[r].hi - ranges[r].lo + 1) * params.n_head * (dk + dv);
  }
  const int64_t n_tasks = n_q * n_kv;
  const int64_t n_block_tasks = blocks.empty() ? 0 : (static_cast<int64_t>(blocks.size()) - 1) * n_kv;
  if (n_block_tasks > 0 && (pool == nullptr || pool->size() <= 1 || work < (1 << 14))) {
    run_blocks(0, n_block_tasks);
  } else if (n_block_tasks > 0) {
    pool->parallel_for(n_block_tasks, 1, run_blocks);
  } else if (pool == nullptr || pool->size() <= 1 || n_tasks == 1 || work < (1 << 14)) {
    run(0, n_tasks);
  } else if (params.flash && n_tasks < 4 * pool->size()) {
    attend_flash_split(views, ranges, n_kv, params, task, count_empty, *pool);
  } else {
    pool->parallel_for(n_tasks, 1, run);
  }
}

}  // namespace keel::kernels
