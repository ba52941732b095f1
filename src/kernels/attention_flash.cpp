// Flash attention driver: walks a row's visible keys segment by segment (tiles of 8 pages
// aligned to absolute positions) and hands each tile to the tile kernel of the chosen ISA; the
// arithmetic is defined in attention_flash.h. K/V types the SIMD kernels do not read
// directly are widened to f32 rows first (tensor::dequantize_row's values).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/attention_flash.h"
#include "kernels/attention_internal.h"
#include "kernels/quantize_act.h"
#include "kernels/widen.h"

namespace keel::kernels::detail {

namespace {

std::atomic<int> g_isa_override{static_cast<int>(FlashIsa::kAuto)};

// Types the SIMD tile kernels read straight from the page.
bool reads_directly(tensor::DType type, int64_t d) {
  switch (type) {
    case tensor::DType::kF32:
    case tensor::DType::kF16:
    case tensor::DType::kBF16: return true;
    case tensor::DType::kQ8_0: return d % 32 == 0;
    default: return false;
  }
}

// Per-task buffers: the query (when the task brings none prepared) and the tile kernel's
// head pointers.
struct TaskScratch {
  PreparedQuery own;
  std::vector<const float*> q_ptr;
  std::vector<float*> acc_ptr, l_ptr;
};

// Per-thread buffers of one call; sized on use, never shrunk.
struct FlashScratch {
  std::vector<TaskScratch> tasks;
  std::vector<float> scores, wk, wv;
};

// Rows [j0, j1) of a tile widened to f32 rows of `buf` ([n_rows][d]); the tile then points there.
void widen_rows(tensor::DType& type, const uint8_t*& rows, size_t& stride, int64_t j0, int64_t j1,
                int64_t d, float* buf) {
  for (int64_t j = j0; j < j1; ++j) widen_row(type, rows + j * stride, buf + j * d, d);
  type = tensor::DType::kF32;
  rows = reinterpret_cast<const uint8_t*>(buf);
  stride = sizeof(float) * static_cast<size_t>(d);
}

}  // namespace

bool flash_isa_available(FlashIsa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case FlashIsa::kAuto:
    case FlashIsa::kTwin: return true;
    case FlashIsa::kAvx2: return f.avx2 && f.fma && f.f16c;
    case FlashIsa::kAvx512:
      return f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni && f.f16c && f.fma;
  }
  return false;
}

FlashTileFn flash_tile_fn(FlashIsa isa) {
  if (isa == FlashIsa::kAuto) {
    isa = flash_isa_available(FlashIsa::kAvx512) ? FlashIsa::kAvx512
          : flash_isa_available(FlashIsa::kAvx2) ? FlashIsa::kAvx2
                                                 : FlashIsa::kTwin;
  }
  if (!flash_isa_available(isa)) {
    throw Error(ErrorCode::kUnsupported, "flash attention: the requested ISA is not available on this CPU");
  }
  switch (isa) {
    case FlashIsa::kAvx512: return flash_tile_avx512;
    case FlashIsa::kAvx2: return flash_tile_avx2;
    default: return flash_tile_twin;
  }
}

ScopedFlashIsa::ScopedFlashIsa(FlashIsa isa)
    : saved_(static_cast<FlashIsa>(g_isa_override.exchange(static_cast<int>(isa)))) {}
ScopedFlashIsa::~ScopedFlashIsa() { g_isa_override.store(static_cast<int>(saved_)); }
FlashIsa flash_isa_override() { return static_cast<FlashIsa>(g_isa_override.load()); }

namespace {

// A head group's online-softmax state inside a flat block of flash_partial_floats():
// m [group], l [group][16], acc [group][pad16(dv)].
struct StateView {
  float* m;
  float* l;
  float* acc;
};

StateView state_view(float* base, int64_t group) { return {base, base + group, base + 17 * group}; }

bool quantized_keys(const kv::KvLayerView& v) { return v.k_type == tensor::DType::kQ8_0 && v.head_dim_k % 32 == 0; }

// The tile kernel's view of task t's heads over state `st`.
FlashHeads prepare_heads(const HeadGroupTask& t, StateView st, TaskScratch& s) {
  const int64_t dk = t.view->head_dim_k, g_n = t.group;
  const int64_t dk16 = pad16(dk), dv16 = pad16(t.view->head_dim_v);
  const PreparedQuery* pq = t.prepared;
  if (!pq) {
    prepare_query(t, s.own);
    pq = &s.own;
  }
  s.q_ptr.resize(static_cast<size_t>(g_n));
  s.acc_ptr.resize(static_cast<size_t>(g_n));
  s.l_ptr.resize(static_cast<size_t>(g_n));
  for (int64_t g = 0; g < g_n; ++g) {
    s.q_ptr[g] = &pq->q[g * dk16];
    s.acc_ptr[g] = st.acc + g * dv16;
    s.l_ptr[g] = st.l + g * 16;
  }
  FlashHeads heads;
  heads.n = g_n;
  heads.q = s.q_ptr.data();
  heads.acc = s.acc_ptr.data();
  heads.m = st.m;
  heads.l = s.l_ptr.data();
  if (quantized_keys(*t.view)) heads.qblocks = pq->qblocks.data();
  return heads;
}

bool page_held(const kv::KvLayerView& v, size_t page) {
  return page < v.k_pages.size() && page < v.v_pages.size() && v.k_pages[page] && v.v_pages[page];
}

// Runs the tile of keys [lo, hi] (inside one segment) of tasks[0, n) (one query row, the
// same view) over their states `st` (already reset); false if no page was held. The tasks
// run one after another over the segment's pages, which stay in L2 between them (a segment
// of TinyLlama's 4 kv heads at q8_0 is 139 KiB), so each page comes from memory once. A
// single task prefetches its head's slice of each next page; several tasks (a decode unit:
// all kv heads) rely on the caller's flash_prefetch of the whole range, issued a unit ahead
// in installments, one per task.
// `k_major` (may be null): the segment's K rows element-major (FlashPage::k_major), for
// every page of the tile.
bool run_tiles(const HeadGroupTask* tasks, int64_t n, const AttentionParams& p, int64_t lo,
               int64_t hi, const StateView* st, KvPrefetch* next, const float* k_major) {
  const kv::KvLayerView& v = *tasks[0].view;
  const FlashIsa isa = flash_isa_override();
  static const FlashTileFn best = flash_tile_fn(FlashIsa::kAuto);
  const FlashTileFn fn = isa == FlashIsa::kAuto ? best : flash_tile_fn(isa);
  const bool twin = fn == flash_tile_twin;  // the twin reads every type itself

  const int64_t dk = v.head_dim_k, dv = v.head_dim_v, pt = v.page_tokens;
  const int64_t span = flash_segment_span(v), tile_lo = lo / span * span;
  if (hi >= tile_lo + span) {
    throw Error(ErrorCode::kInternal, "flash attention: a tile's keys cross a segment boundary");
  }
  thread_local FlashScratch s;
  if (s.tasks.size() < static_cast<size_t>(n)) s.tasks.resize(static_cast<size_t>(n));
  thread_local std::vector<FlashHeads> heads;
  thread_local std::vector<FlashPage> pages;
  heads.resize(static_cast<size_t>(n));
  int64_t max_group = 0;
  for (int64_t i = 0; i < n; ++i) {
    heads[i] = prepare_heads(tasks[i], st[i], s.tasks[i]);
    max_group = std::max(max_group, tasks[i].group);
  }
  s.scores.resize(static_cast<size_t>(max_group * pad16(span)));  // [group][pad16(span)]
  const FlashShape shape{dk, dv, p.scale, p.softcap};
  const bool widen_k = !twin && !reads_directly(v.k_type, dk);
  const bool widen_v = !twin && !v.v_pairs && !reads_directly(v.v_type, dv);
  if ((v.v_pairs && (v.v_type != tensor::DType::kQ8_0 || dv % 32 != 0 || pt % 2 != 0)) ||
      (v.k_tiles && (v.k_type != tensor::DType::kQ8_0 || dk % 32 != 0 || pt % 16 != 0))) {
    throw Error(ErrorCode::kInvalidArgument,
                "flash attention: a q8_0 tile view needs q8_0, head dimensions % 32 == 0 and pages of whole tile groups");
  }
  const int64_t max_pages = span / pt;
  if (widen_k) s.wk.resize(static_cast<size_t>(span * dk));  // [page][pt][dk]
  if (widen_v) s.wv.resize(static_cast<size_t>(span * dv));  // [page][pt][dv]
  pages.resize(static_cast<size_t>(max_pages));

  bool any = false;
  for (int64_t i = 0; i < n; ++i) {
    if (next) next->issue_until(i + 1, n);
    const HeadGroupTask& t = tasks[i];
    int64_t n_pages = 0;
    for (int64_t page_lo = (lo / pt) * pt; page_lo <= hi; page_lo += pt) {
      const size_t page = static_cast<size_t>(page_lo / pt);
      if (!page_held(v, page)) continue;  // a broken view; its keys are simply absent
      FlashPage& fp = pages[static_cast<size_t>(n_pages)];
      fp = FlashPage{};
      const int64_t next_lo = page_lo + pt;
      const size_t next_page = page + 1;
      if (n == 1 && next_lo <= hi && page_held(v, next_page)) {  // this head's slice of the next page
        fp.next_k = v.k_pages[next_page] + static_cast<size_t>(t.kvh) * v.k_head_bytes;
        fp.next_v = v.v_pages[next_page] + static_cast<size_t>(t.kvh) * v.v_head_bytes;
        fp.next_k_bytes = v.k_head_bytes;
        fp.next_v_bytes = v.v_head_bytes;
        fp.n_next = std::min(pt - 1, hi - next_lo) + 1;
      }
      fp.k_type = v.k_type;
      fp.v_type = v.v_type;
      fp.k = v.k_pages[page] + static_cast<size_t>(t.kvh) * v.k_head_bytes;
      fp.v = v.v_pages[page] + static_cast<size_t>(t.kvh) * v.v_head_bytes;
      fp.k_stride = v.k_token_stride;
      fp.v_stride = v.v_token_stride;
      fp.k_tiles = v.k_tiles;
      fp.v_pairs = v.v_pairs;
      fp.tile_rows = pt;
      fp.offset = page_lo - tile_lo;
      fp.j0 = std::max(page_lo, lo) - page_lo;
      fp.j1 = std::min(page_lo + pt - 1, hi) - page_lo + 1;
      if (k_major) fp.k_major = k_major + fp.offset * dk;
      if (widen_k) widen_rows(fp.k_type, fp.k, fp.k_stride, fp.j0, fp.j1, dk, s.wk.data() + n_pages * pt * dk);
      if (widen_v) widen_rows(fp.v_type, fp.v, fp.v_stride, fp.j0, fp.j1, dv, s.wv.data() + n_pages * pt * dv);
      ++n_pages;
    }
    if (n_pages == 0) continue;  // every task sees the same pages: then none has any
    fn(shape, FlashTile{pages.data(), n_pages, span}, heads[i], s.scores.data());
    any = true;
  }
  return any;
}

}  // namespace

void prepare_query(const HeadGroupTask& t, PreparedQuery& out) {
  const int64_t dk = t.view->head_dim_k, g_n = t.group, dk16 = pad16(dk);
  out.q.assign(static_cast<size_t>(g_n * dk16), 0.0f);
  for (int64_t g = 0; g < g_n; ++g) {
    std::memcpy(&out.q[g * dk16], t.q + g * dk, sizeof(float) * static_cast<size_t>(dk));
  }
  if (!quantized_keys(*t.view)) return;
  const int64_t nb = dk / 32;
  out.qblocks.resize(static_cast<size_t>(nb * g_n));
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t g = 0; g < g_n; ++g) {
      Q8QueryBlock& qb = out.qblocks[static_cast<size_t>(b * g_n + g)];
      qb.d = q::quantize_block_q8(t.q + g * dk + 32 * b, 32, qb.qs);
      int32_t sum = 0;
      for (int i = 0; i < 32; ++i) sum += qb.qs[i];
      qb.minus_128_sum = -128 * sum;
    }
  }
}

int64_t flash_segment_span(const kv::KvLayerView& v) { return 8 * int64_t{v.page_tokens}; }

namespace {

// Calls fn(first line, line count) for each run of K rows and of V rows (every kv head) of
// keys [lo, hi], page by page.
template <class Fn>
void for_each_row_run(const kv::KvLayerView& v, int64_t lo, int64_t hi, Fn&& fn) {
  const int64_t pt = v.page_tokens;
  for (int64_t page_lo = (lo / pt) * pt; page_lo <= hi; page_lo += pt) {
    const size_t page = static_cast<size_t>(page_lo / pt);
    if (!page_held(v, page)) continue;
    const int64_t r0 = std::max(lo, page_lo) - page_lo, r1 = std::min(hi, page_lo + pt - 1) - page_lo + 1;
    auto run = [&](const uint8_t* begin, const uint8_t* end) {
      const auto first = reinterpret_cast<uintptr_t>(begin) & ~uintptr_t{63};
      const auto last = reinterpret_cast<uintptr_t>(end - 1);
      fn(reinterpret_cast<const char*>(first), static_cast<int64_t>((last - first) / 64 + 1));
    };
    const uint8_t* k = v.k_pages[page];
    if (v.k_tiles) {  // the page's key tiles, every kv head: one region
      run(k, k + static_cast<size_t>(v.n_kv_heads) * v.k_head_bytes);
    } else {
      run(k + static_cast<size_t>(r0) * v.k_token_stride, k + static_cast<size_t>(r1) * v.k_token_stride);
    }
    const uint8_t* vb = v.v_pages[page];
    if (v.v_pairs) {  // the page's pair tiles, every kv head: one region
      run(vb, vb + static_cast<size_t>(v.n_kv_heads) * v.v_head_bytes);
    } else {
      run(vb + static_cast<size_t>(r0) * v.v_token_stride, vb + static_cast<size_t>(r1) * v.v_token_stride);
    }
  }
}

void prefetch_lines(const char* first, int64_t lines) {
  for (int64_t l = 0; l < lines; ++l) _mm_prefetch(first + 64 * l, _MM_HINT_T1);
}

}  // namespace

void KvPrefetch::plan(const kv::KvLayerView& v, int64_t lo, int64_t hi) {
  n_runs_ = run_ = 0;
  total_ = issued_ = in_run_ = 0;
  for_each_row_run(v, lo, hi, [&](const char* first, int64_t lines) {
    if (n_runs_ == kMaxRuns) {  // more than a segment: ask for the excess at once
      prefetch_lines(first, lines);
      return;
    }
    runs_[n_runs_++] = {first, lines};
    total_ += lines;
  });
}

void KvPrefetch::issue_until(int64_t num, int64_t den) {
  const int64_t target = den > 0 ? total_ * num / den : total_;
  for (; issued_ < target && run_ < n_runs_; ++issued_) {
    _mm_prefetch(runs_[run_].first + 64 * in_run_, _MM_HINT_T1);
    if (++in_run_ == runs_[run_].lines) ++run_, in_run_ = 0;
  }
}

void flash_prefetch(const kv::KvLayerView& v, int64_t lo, int64_t hi) {
  for_each_row_run(v, lo, hi, prefetch_lines);
}

size_t flash_partial_floats(int64_t group, int64_t dv) {
  return static_cast<size_t>(group * (17 + pad16(dv)));
}

namespace {

bool partial_of_segment(const HeadGroupTask* tasks, int64_t n, const AttentionParams& p, int64_t seg_lo,
                        float* const* partials, KvPrefetch* next, const float* k_major) {
  thread_local std::vector<StateView> st;
  st.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t g_n = tasks[i].group, dv16 = pad16(tasks[i].view->head_dim_v);
    st[i] = state_view(partials[i], g_n);
    std::fill(st[i].m, st[i].m + g_n, -std::numeric_limits<float>::infinity());
    std::fill(st[i].l, st[i].l + 16 * g_n + g_n * dv16, 0.0f);  // l and acc are contiguous
  }
  const HeadGroupTask& t = tasks[0];
  const int64_t span = flash_segment_span(*t.view);
  const bool any = run_tiles(tasks, n, p, std::max(seg_lo, t.keys.lo), std::min(seg_lo + span - 1, t.keys.hi),
                             st.data(), next, k_major);
  if (next) next->issue_until(1, 1);  // whatever a short segment left
  return any;
}

// Whether the fold uses the AVX-512 combine (the same bits as flash_combine).
bool simd_combine() { return flash_tile_fn(flash_isa_override()) == flash_tile_avx512; }

// State a ← the fold of state b into a (attention_flash.h), for g_n heads.
void fold_state(float* a, const float* b, int64_t g_n, int64_t dv, bool simd) {
  const int64_t dv16 = pad16(dv);
  StateView sa = state_view(a, g_n);
  const StateView sb = state_view(const_cast<float*>(b), g_n);
  if (simd) {
    flash_combine_heads_avx512(sa.m, sa.l, sa.acc, sb.m, sb.l, sb.acc, g_n, dv16);
    return;
  }
  for (int64_t g = 0; g < g_n; ++g)
    flash_combine(sa.m[g], sa.l + 16 * g, sa.acc + dv16 * g, sb.m[g], sb.l + 16 * g, sb.acc + dv16 * g, dv);
}

// t.out ← the normalised result of state a (with the heads' sinks).
void finish_state(const HeadGroupTask& t, const AttentionParams& p, float* a) {
  const int64_t g_n = t.group, dv = t.view->head_dim_v, dv16 = pad16(dv);
  const StateView sa = state_view(a, g_n);
  for (int64_t g = 0; g < g_n; ++g) {
    const float* sink = p.sinks ? &p.sinks[t.first_head + g] : nullptr;
    flash_finish(sa.m[g], sa.l + 16 * g, sa.acc + dv16 * g, sink, dv, t.out + g * dv);
  }
}

// Rows [r_lo, r_hi] of segment seg_lo of kv head kvh, widened and stored element-major per
// 16 rows into out ([span][dk], FlashPage::k_major's layout from the segment's first row);
// the other rows of a group they touch are zero (their scores are never kept).
void make_k_major(const kv::KvLayerView& v, int64_t kvh, int64_t seg_lo, int64_t r_lo, int64_t r_hi,
                  float* out) {
  const int64_t dk = v.head_dim_k;
  for (int64_t g = (r_lo - seg_lo) / 16 * 16; seg_lo + g <= r_hi; g += 16) {
    const uint8_t* rows[16];
    for (int64_t jj = 0; jj < 16; ++jj) {
      const int64_t pos = seg_lo + g + jj;
      const size_t page = static_cast<size_t>(pos / v.page_tokens);
      rows[jj] = pos < r_lo || pos > r_hi || !page_held(v, page)
                     ? nullptr
                     : v.k_pages[page] + static_cast<size_t>(kvh) * v.k_head_bytes +
                           static_cast<size_t>(pos % v.page_tokens) * v.k_token_stride;
    }
    k_major_group_avx512(v.k_type, rows, dk, out + g * dk);
  }
}

}  // namespace

bool flash_partial(const HeadGroupTask* tasks, int64_t n, const AttentionParams& p,
                   int64_t seg_lo, float* const* partials, KvPrefetch* next) {
  return partial_of_segment(tasks, n, p, seg_lo, partials, next, nullptr);
}

bool flash_rows_pay(const kv::KvLayerView& v) {
  if (v.k_tiles || v.head_dim_k % 16 != 0 || v.page_tokens % 16 != 0) return false;
  if (v.k_type != tensor::DType::kF32 && v.k_type != tensor::DType::kF16 && v.k_type != tensor::DType::kBF16) {
    return false;
  }
  return flash_tile_fn(flash_isa_override()) == flash_tile_avx512;
}

void attend_flash_rows(const HeadGroupTask* tasks, int64_t n, const AttentionParams& p, bool* had) {
  if (n <= 0) return;
  const kv::KvLayerView& v = *tasks[0].view;
  const int64_t span = flash_segment_span(v), dk = v.head_dim_k;
  const int64_t g_n = tasks[0].group, dv = v.head_dim_v;
  const size_t pf = flash_partial_floats(g_n, dv);
  const bool major = flash_rows_pay(v);
  thread_local std::vector<PreparedQuery> queries;
  thread_local std::vector<HeadGroupTask> ts;
  thread_local std::vector<float> states, part, k_major;
  thread_local std::vector<char> has;
  if (queries.size() < static_cast<size_t>(n)) queries.resize(static_cast<size_t>(n));
  ts.assign(tasks, tasks + n);
  states.resize(static_cast<size_t>(n) * pf);
  part.resize(pf);
  has.assign(static_cast<size_t>(n), 0);
  if (major) k_major.resize(static_cast<size_t>(span * dk));
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (ts[i].keys.empty()) continue;
    if (!ts[i].prepared) {
      prepare_query(ts[i], queries[i]);
      ts[i].prepared = &queries[i];
    }
    lo = std::min(lo, ts[i].keys.lo);
    hi = std::max(hi, ts[i].keys.hi);
  }
  const bool simd = simd_combine();
  for (int64_t seg_lo = hi < 0 ? 0 : lo / span * span; seg_lo <= hi; seg_lo += span) {
    const int64_t seg_hi = seg_lo + span - 1;
    if (major) {
      int64_t r_lo = std::numeric_limits<int64_t>::max(), r_hi = -1;  // rows some task sees
      for (int64_t i = 0; i < n; ++i) {
        const KeyRange& kr = ts[i].keys;
        if (kr.empty() || kr.hi < seg_lo || kr.lo > seg_hi) continue;
        r_lo = std::min(r_lo, std::max(kr.lo, seg_lo));
        r_hi = std::max(r_hi, std::min(kr.hi, seg_hi));
      }
      if (r_hi < 0) continue;
      make_k_major(v, ts[0].kvh, seg_lo, r_lo, r_hi, k_major.data());
    }
    for (int64_t i = 0; i < n; ++i) {
      const KeyRange& kr = ts[i].keys;
      if (kr.empty() || kr.hi < seg_lo || kr.lo > seg_hi) continue;
      float* state = states.data() + static_cast<size_t>(i) * pf;
      float* dst = has[i] ? part.data() : state;
      if (!partial_of_segment(&ts[i], 1, p, seg_lo, &dst, nullptr, major ? k_major.data() : nullptr)) continue;
      if (has[i]) {
        fold_state(state, part.data(), g_n, dv, simd);
      } else {
        has[i] = 1;
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    had[i] = has[i] != 0;
    if (had[i]) {
      finish_state(ts[i], p, states.data() + static_cast<size_t>(i) * pf);
    } else if (!ts[i].keys.empty()) {
      std::memset(ts[i].out, 0, sizeof(float) * static_cast<size_t>(g_n * dv));
    }
  }
}

bool flash_fold_finish(const HeadGroupTask& t, const AttentionParams& p, float* partials,
                       const char* held, int64_t n) {
  const int64_t g_n = t.group, dv = t.view->head_dim_v;
  const size_t pf = flash_partial_floats(g_n, dv);
  // The fold runs on one thread after a decode step's parallel part: its exponentials and
  // scalings go 16 lanes at a time where the AVX-512 tile kernel runs (the same bits).
  const bool simd = simd_combine();
  float* a = nullptr;  // the running state: the first held segment, folded in place
  for (int64_t i = 0; i < n; ++i) {
    if (!held[i]) continue;
    float* b = partials + static_cast<size_t>(i) * pf;
    if (!a) {
      a = b;
      continue;
    }
    fold_state(a, b, g_n, dv, simd);
  }
  if (!a) {
    std::memset(t.out, 0, sizeof(float) * static_cast<size_t>(g_n * dv));
    return false;
  }
  finish_state(t, p, a);
  return true;
}

bool attend_flash(const HeadGroupTask& t, const AttentionParams& p) {
  const int64_t span = flash_segment_span(*t.view);
  const int64_t first = t.keys.lo / span * span, n = (t.keys.hi - first) / span + 1;
  const size_t pf = flash_partial_floats(t.group, t.view->head_dim_v);
  thread_local std::vector<float> partials;
  thread_local std::vector<char> held;
  thread_local PreparedQuery query;
  partials.resize(static_cast<size_t>(n) * pf);
  held.resize(static_cast<size_t>(n));
  HeadGroupTask tp = t;
  if (!tp.prepared) {
    prepare_query(t, query);
    tp.prepared = &query;
  }
  for (int64_t i = 0; i < n; ++i) {
    float* part = partials.data() + static_cast<size_t>(i) * pf;
    held[i] = flash_partial(&tp, 1, p, first + i * span, &part);
  }
  return flash_fold_finish(t, p, partials.data(), held.data(), n);
}

}  // namespace keel::kernels::detail
