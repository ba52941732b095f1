// Flash attention driver: walks a row's visible keys page by page (tiles aligned to
// absolute positions) and hands each tile to the tile kernel of the chosen ISA; the
// arithmetic is defined in attention_flash.h. K/V types the SIMD kernels do not read
// directly are widened to f32 rows first (tensor::dequantize_row's values).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <vector>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/attention_flash.h"
#include "kernels/attention_internal.h"
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

// Per-thread buffers of one task; sized on use, never shrunk.
struct FlashScratch {
  std::vector<float> q, acc, m, l, scores, wk, wv;
  std::vector<const float*> q_ptr;
  std::vector<float*> acc_ptr, l_ptr;
};

// Asks for the K and V rows [j0, j1) of the tile at page_lo while the current one computes:
// in decode each tile is read once, from memory.
void prefetch_tile(const kv::KvLayerView& v, int64_t kvh, int64_t page_lo, int64_t j0, int64_t j1) {
  const size_t page = static_cast<size_t>(page_lo / v.page_tokens);
  if (page >= v.k_pages.size() || page >= v.v_pages.size() || !v.k_pages[page] || !v.v_pages[page]) return;
  const uint8_t* k = v.k_pages[page] + static_cast<size_t>(kvh) * v.k_head_bytes;
  const uint8_t* vv = v.v_pages[page] + static_cast<size_t>(kvh) * v.v_head_bytes;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* kr = k + j * v.k_token_stride;
    const uint8_t* vr = vv + j * v.v_token_stride;
    for (size_t b = 0; b < v.k_head_bytes; b += 64) __builtin_prefetch(kr + b);
    __builtin_prefetch(kr + v.k_head_bytes - 1);
    for (size_t b = 0; b < v.v_head_bytes; b += 64) __builtin_prefetch(vr + b);
    __builtin_prefetch(vr + v.v_head_bytes - 1);
  }
}

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
    case FlashIsa::kAvx512: return f.avx512f && f.avx512bw && f.avx512vl && f.f16c && f.fma;
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

bool attend_flash(const HeadGroupTask& t, const AttentionParams& p) {
  const kv::KvLayerView& v = *t.view;
  const FlashIsa isa = flash_isa_override();
  static const FlashTileFn best = flash_tile_fn(FlashIsa::kAuto);
  const FlashTileFn fn = isa == FlashIsa::kAuto ? best : flash_tile_fn(isa);
  const bool twin = fn == flash_tile_twin;  // the twin reads every type itself

  const int64_t dk = v.head_dim_k, dv = v.head_dim_v, g_n = t.group, pt = v.page_tokens;
  const int64_t dk16 = pad16(dk), dv16 = pad16(dv), sp = pad16(pt);
  thread_local FlashScratch s;
  s.q.assign(static_cast<size_t>(g_n * dk16), 0.0f);    // [group][dk16], zero padded
  s.acc.assign(static_cast<size_t>(g_n * dv16), 0.0f);  // [group][dv16]
  s.m.assign(static_cast<size_t>(g_n), -std::numeric_limits<float>::infinity());
  s.l.assign(static_cast<size_t>(g_n * 16), 0.0f);      // [group][16]
  s.scores.resize(static_cast<size_t>(g_n * sp));       // [group][sp]
  s.q_ptr.resize(static_cast<size_t>(g_n));
  s.acc_ptr.resize(static_cast<size_t>(g_n));
  s.l_ptr.resize(static_cast<size_t>(g_n));
  for (int64_t g = 0; g < g_n; ++g) {
    std::memcpy(&s.q[g * dk16], t.q + g * dk, sizeof(float) * static_cast<size_t>(dk));
    s.q_ptr[g] = &s.q[g * dk16];
    s.acc_ptr[g] = &s.acc[g * dv16];
    s.l_ptr[g] = &s.l[g * 16];
  }
  const FlashShape shape{dk, dv, p.scale, p.softcap};
  const FlashHeads heads{g_n, s.q_ptr.data(), s.acc_ptr.data(), s.m.data(), s.l_ptr.data()};
  const bool widen_k = !twin && !reads_directly(v.k_type, dk);
  const bool widen_v = !twin && !reads_directly(v.v_type, dv);
  if (widen_k) s.wk.resize(static_cast<size_t>(pt * dk));  // [pt][dk]
  if (widen_v) s.wv.resize(static_cast<size_t>(pt * dv));  // [pt][dv]

  bool any = false;
  for (int64_t page_lo = (t.keys.lo / pt) * pt; page_lo <= t.keys.hi; page_lo += pt) {
    const size_t page = static_cast<size_t>(page_lo / pt);
    if (page >= v.k_pages.size() || page >= v.v_pages.size() || !v.k_pages[page] ||
        !v.v_pages[page]) {
      continue;  // not held: a broken view; its keys are simply absent
    }
    const int64_t next = page_lo + pt;
    if (next <= t.keys.hi) prefetch_tile(v, t.kvh, next, 0, std::min(pt - 1, t.keys.hi - next) + 1);
    FlashTile tile;
    tile.k_type = v.k_type;
    tile.v_type = v.v_type;
    tile.k = v.k_pages[page] + static_cast<size_t>(t.kvh) * v.k_head_bytes;
    tile.v = v.v_pages[page] + static_cast<size_t>(t.kvh) * v.v_head_bytes;
    tile.k_stride = v.k_token_stride;
    tile.v_stride = v.v_token_stride;
    tile.n_rows = pt;
    tile.j0 = std::max(page_lo, t.keys.lo) - page_lo;
    tile.j1 = std::min(page_lo + pt - 1, t.keys.hi) - page_lo + 1;
    if (widen_k) widen_rows(tile.k_type, tile.k, tile.k_stride, tile.j0, tile.j1, dk, s.wk.data());
    if (widen_v) widen_rows(tile.v_type, tile.v, tile.v_stride, tile.j0, tile.j1, dv, s.wv.data());
    fn(shape, tile, heads, s.scores.data());
    any = true;
  }
  if (!any) {
    std::memset(t.out, 0, sizeof(float) * static_cast<size_t>(g_n * dv));
    return false;
  }
  for (int64_t g = 0; g < g_n; ++g) {
    const float* sink = p.sinks ? &p.sinks[t.first_head + g] : nullptr;
    flash_finish(s.m[g], s.l_ptr[g], s.acc_ptr[g], sink, dv, t.out + g * dv);
  }
  return true;
}

}  // namespace keel::kernels::detail
