// AVX-512 BF16 kernel of the pair-dot path (matmul_bf16dot.h defines the arithmetic).
//
// A tile is 4 weight rows x R <= 4 activation rows: per 32-element chunk, 4 weight loads and
// R activation loads feed 4R vdpbf16ps, each on its own (row, activation row) sum, so every
// output goes through the same instructions whatever the tile. Activation rows are taken 32
// at a time (a chunk of them stays in L2 while every tile of the task's weight rows passes
// over it); the weight rows stream in their stored layout.
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

constexpr int kTileRows = 4;        // weight rows per tile
constexpr int kTileAct = 4;         // activation rows per tile (at most)
constexpr int64_t kActChunk = 32;   // activation rows kept hot while the tiles pass

// The tree of the definition: L[j] + L[j+8], then 4, 2 and 1 apart.
inline float reduce_lanes(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// Weight rows w[0..4) (n_in elements each) x activation rows x[0..R) (padded to 32):
// out[i][r] = the defined dot. `next` (4 rows or null): the next tile's rows, asked for
// into L2 at the column being read (decode streams each row once).
template <int R>
void tile(const uint8_t* const (&w)[kTileRows], const uint16_t* const (&x)[R], int64_t n_in,
          const uint8_t* const* next, float (&out)[kTileRows][kTileAct]) {
  __m512 acc[kTileRows][R];
  for (auto& a : acc)
    for (auto& v : a) v = _mm512_setzero_ps();
  const int64_t full = n_in / 32;
  for (int64_t c = 0; c < full; ++c) {
    if (next) {
      for (int i = 0; i < kTileRows; ++i) _mm_prefetch(reinterpret_cast<const char*>(next[i] + 64 * c), _MM_HINT_T1);
    }
    __m512i xv[R];
    for (int r = 0; r < R; ++r) xv[r] = _mm512_load_si512(x[r] + 32 * c);
    for (int i = 0; i < kTileRows; ++i) {
      const __m512bh wv = (__m512bh)_mm512_loadu_si512(w[i] + 64 * c);
      for (int r = 0; r < R; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], wv, (__m512bh)xv[r]);
    }
  }
  if (full * 32 < n_in) {
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (n_in - full * 32)) - 1);
    __m512i xv[R];
    for (int r = 0; r < R; ++r) xv[r] = _mm512_load_si512(x[r] + 32 * full);
    for (int i = 0; i < kTileRows; ++i) {
      const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(m, w[i] + 64 * full);
      for (int r = 0; r < R; ++r) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], wv, (__m512bh)xv[r]);
    }
  }
  for (int i = 0; i < kTileRows; ++i)
    for (int r = 0; r < R; ++r) out[i][r] = reduce_lanes(acc[i][r]);
}

template <int R>
void run_tile(const WeightMatrix& w, const uint8_t* const (&rows)[kTileRows], int n_valid, const Bf16Rows& x,
              int64_t r0, const uint8_t* const* next, float* y, int64_t o0) {
  const uint16_t* xr[R];
  for (int r = 0; r < R; ++r) xr[r] = x.data + (r0 + r) * x.stride;
  float out[kTileRows][kTileAct];
  tile<R>(rows, xr, w.n_in, next, out);
  for (int i = 0; i < n_valid; ++i)
    for (int r = 0; r < R; ++r) y[(r0 + r) * w.n_out + o0 + i] = out[i][r];
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
  for (int64_t a0 = 0; a0 < n_rows; a0 += kActChunk) {
    const int64_t a1 = std::min(n_rows, a0 + kActChunk);
    for (int64_t o = ob; o < oe; o += kTileRows) {
      const int n_valid = static_cast<int>(std::min<int64_t>(kTileRows, oe - o));
      const uint8_t* rows[kTileRows];
      for (int i = 0; i < kTileRows; ++i) rows[i] = w.row(o + std::min(i, n_valid - 1));
      const uint8_t* next[kTileRows];
      const bool has_next = a0 == 0 && o + kTileRows < oe;
      for (int i = 0; has_next && i < kTileRows; ++i) next[i] = w.row(std::min(o + kTileRows + i, oe - 1));
      for (int64_t r = a0; r < a1; r += kTileAct) {
        // The first activation tile of the first chunk streams the next weight tile.
        const uint8_t* const* pf = has_next && r == a0 ? next : nullptr;
        switch (std::min<int64_t>(kTileAct, a1 - r)) {
          case 1: run_tile<1>(w, rows, n_valid, x, r, pf, y, o); break;
          case 2: run_tile<2>(w, rows, n_valid, x, r, pf, y, o); break;
          case 3: run_tile<3>(w, rows, n_valid, x, r, pf, y, o); break;
          default: run_tile<4>(w, rows, n_valid, x, r, pf, y, o); break;
        }
      }
    }
  }
}

}  // namespace keel::kernels::bf16dot

#pragma GCC pop_options
#pragma GCC diagnostic pop
