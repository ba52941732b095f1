// AVX-512 BF16 kernel of the pair-dot path (matmul_bf16dot.h defines the arithmetic).
//
// A tile is W weight rows x R <= 4 activation rows: per 32-element chunk, W weight loads and
// R activation loads feed W·R vdpbf16ps, each on its own (row, activation row) sum, so every
// output goes through the same instructions whatever the tile. Prefill takes 6 weight rows
// (24 sums; the weights stay in L1 while the activation tiles pass), decode 4 (measured
// faster at 1 row). Activation rows go ~256 KiB at a time, so they stay in L2 beside the
// task's weight rows while every tile passes over them. Measured 2 threads, hot
// (BM_QMatmul/30/{2048/5632,5632/2048}/512/2/0), alternating binaries: 4x4 tiles with
// 32-row passes 457-499 / 416-468 GOPS, this 563-569 / 451-461 (L1-resident 4x4 tiles
// alone: ~350 GOPS per core, 87% of the vdpbf16ps peak). Rows longer than 2048 go in equal
// column blocks of at most 2048 (6 weight rows of 4 KiB stay in L1; the tile's sums wait in
// memory between blocks, which changes no bit): the 5632-input product 21.6-25.1 ->
// 19.2-23.4 ms, pp512 bf16 +2-11% (alternating binaries, the same minutes).
#include <immintrin.h>

// GCC 12 reports the _mm512_undefined_* inside its own intrinsics as (maybe-)uninitialized;
// the warning is about the header, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/matmul_bf16dot.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels::bf16dot {
namespace {

constexpr int kPrefillRows = 6;              // weight rows per tile from kTileAct activation rows
constexpr int kDecodeRows = 4;               // below that
constexpr int kTileAct = 4;                  // activation rows per tile (at most)
constexpr int64_t kActPassBytes = 256 << 10;  // activation rows kept in L2 while the tiles pass
constexpr int64_t kMaxPass = 64;               // activation rows per pass (at most)
constexpr int64_t kBlockChunks = 64;           // 32-element chunks per column block (L1: 6 x 4 KiB)

// The tree of the definition: L[j] + L[j+8], then 4, 2 and 1 apart.
inline float reduce_lanes(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// The lane sums of a tile between the column blocks of a long row (tiles()), so that the
// block's weight rows stay in L1 while the activation tiles pass. Storing and reloading a
// sum changes no bit: every sum still takes its chunks in ascending order.
template <int W>
struct TileSums {
  __m512 v[W][kTileAct];  // [weight row][activation row], R <= kTileAct of them used
};

// Weight rows w[0..W) x activation rows x[0..R) (padded to 32), chunks [c0, c1) of 32
// elements (the last chunk of the row zero-padded past n_in): continues the lane sums in
// `sums` (starts from zeros when c0 == 0) and leaves them there. `next` (W rows or null): the next tile's rows, asked for
// into L2 at the column being read (decode streams each row once).
template <int W, int R>
__attribute__((always_inline)) inline void tile_chunks(const uint8_t* const (&w)[W], const uint16_t* const (&x)[R],
                                                       int64_t n_in, int64_t c0, int64_t c1,
                                                       const uint8_t* const* next, TileSums<W>& sums) {
  __m512 acc[W][R];
  for (int i = 0; i < W; ++i)
    for (int r = 0; r < R; ++r) acc[i][r] = c0 == 0 ? _mm512_setzero_ps() : sums.v[i][r];
  const int64_t full = std::min(c1, n_in / 32);
  for (int64_t c = c0; c < full; ++c) {
    if (next) {
      for (int i = 0; i < W; ++i) _mm_prefetch(reinterpret_cast<const char*>(next[i] + 64 * c), _MM_HINT_T1);
    }
    __m512i xv[R];
    for (int r = 0; r < R; ++r) xv[r] = _mm512_load_si512(x[r] + 32 * c);
    for (int i = 0; i < W; ++i) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(w[i] + 64 * c);
      for (int r = 0; r < R; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], wv, (__m512bh)xv[r]);
    }
  }
  if (full < c1) {  // the row's zero-padded last chunk
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (n_in - full * 32)) - 1);
    __m512i xv[R];
    for (int r = 0; r < R; ++r) xv[r] = _mm512_load_si512(x[r] + 32 * full);
    for (int i = 0; i < W; ++i) {
      const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w[i] + 64 * full);
      for (int r = 0; r < R; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], wv, (__m512bh)xv[r]);
    }
  }
  for (int i = 0; i < W; ++i)
    for (int r = 0; r < R; ++r) sums.v[i][r] = acc[i][r];
}

// Chunks [c0, c1) of weight rows `rows` against activation rows r0.. (R of them); when c1
// ends the row, the lane sums are reduced into y.
template <int W, int R>
void run_tile(const WeightMatrix& w, const uint8_t* const (&rows)[W], int n_valid, const Bf16Rows& x, int64_t r0,
              int64_t c0, int64_t c1, const uint8_t* const* next, TileSums<W>& sums, float* y, int64_t o0) {
  const uint16_t* xr[R];
  for (int r = 0; r < R; ++r) xr[r] = x.data + (r0 + r) * x.stride;
  tile_chunks<W, R>(rows, xr, w.n_in, c0, c1, next, sums);
  if (c1 * 32 < w.n_in) return;
  for (int i = 0; i < n_valid; ++i)
    for (int r = 0; r < R; ++r) y[(r0 + r) * w.n_out + o0 + i] = reduce_lanes(sums.v[i][r]);
}

// Weight rows [ob, oe) in tiles of W against every activation row. Rows longer than a
// column block go block by block (each activation tile keeps its sums between blocks).
template <int W>
void tiles(const WeightMatrix& w, const Bf16Rows& x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  const int64_t pass = std::clamp<int64_t>(kActPassBytes / (2 * x.stride) / kTileAct * kTileAct, kTileAct, kMaxPass);
  const int64_t n_chunks = (w.n_in + 31) / 32;
  const int64_t n_blocks = (n_chunks + kBlockChunks - 1) / kBlockChunks;
  const int64_t block = (n_chunks + n_blocks - 1) / n_blocks;  // equal blocks of <= kBlockChunks
  TileSums<W> sums[kMaxPass / kTileAct];  // one per activation tile of a pass (24 KiB for W = 6)
  for (int64_t a0 = 0; a0 < n_rows; a0 += pass) {
    const int64_t a1 = std::min(n_rows, a0 + pass);
    for (int64_t o = ob; o < oe; o += W) {
      const int n_valid = static_cast<int>(std::min<int64_t>(W, oe - o));
      const uint8_t* rows[W];
      for (int i = 0; i < W; ++i) rows[i] = w.row(o + std::min(i, n_valid - 1));
      const uint8_t* next[W];
      const bool has_next = a0 == 0 && o + W < oe;
      for (int i = 0; has_next && i < W; ++i) next[i] = w.row(std::min(o + W + i, oe - 1));
      for (int64_t c0 = 0; c0 < n_chunks; c0 += block) {
        const int64_t c1 = std::min(n_chunks, c0 + block);
        for (int64_t r = a0; r < a1; r += kTileAct) {
          // The first activation tile of the first pass streams the next weight tile.
          const uint8_t* const* pf = has_next && r == a0 ? next : nullptr;
          TileSums<W>& slot = sums[(r - a0) / kTileAct];
          switch (std::min<int64_t>(kTileAct, a1 - r)) {
            case 1: run_tile<W, 1>(w, rows, n_valid, x, r, c0, c1, pf, slot, y, o); break;
            case 2: run_tile<W, 2>(w, rows, n_valid, x, r, c0, c1, pf, slot, y, o); break;
            case 3: run_tile<W, 3>(w, rows, n_valid, x, r, c0, c1, pf, slot, y, o); break;
            default: run_tile<W, 4>(w, rows, n_valid, x, r, c0, c1, pf, slot, y, o); break;
          }
        }
      }
    }
  }
}

}  // namespace

void round_rows_avx512(const float* x, int64_t n_rows, int64_t n_in, uint16_t* out, int64_t stride) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n_in;
    uint16_t* o = out + r * stride;
    for (int64_t k = 0; k < stride; k += 16) {
      // tensor::fp32_to_bf16, 16 at a time; past n_in: zeros.
      const __mmask16 m = k + 16 <= n_in ? __mmask16(0xffff)
                          : k < n_in     ? static_cast<__mmask16>((1u << (n_in - k)) - 1)
                                         : __mmask16(0);
      const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, xr + k));
      const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
      __m512i h = _mm512_srli_epi32(
          _mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(_mm512_srli_epi32(u, 16), one)), 16);
      h = _mm512_mask_or_epi32(h, nan, _mm512_srli_epi32(u, 16), quiet);
      _mm256_store_si256(reinterpret_cast<__m256i*>(o + k), _mm512_cvtepi32_epi16(h));
    }
  }
}

void range_avx512(const WeightMatrix& w, const Bf16Rows& x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  if (n_rows >= kTileAct) {
    tiles<kPrefillRows>(w, x, n_rows, y, ob, oe);
  } else {
    tiles<kDecodeRows>(w, x, n_rows, y, ob, oe);
  }
}

}  // namespace keel::kernels::bf16dot

#pragma GCC pop_options
#pragma GCC diagnostic pop
