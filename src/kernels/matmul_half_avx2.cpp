// AVX2 + F16C implementation of matmul_half_range (matmul_half.h, matmul_half_internal.h):
// one ymm per (weight row, activation row) holds the reference's 8 partial sums, lane j =
// s_j, fused multiply-add. Decode tiles are 8 weight rows (8 independent add chains) and
// prefetch the next tile's rows at the column being read; with several activation rows, 4
// weight rows x 2 activation rows share each widened weight vector (16 ymm registers).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/matmul_half_internal.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
// Only the fused multiply-adds written out; a contracted combine would change the bits.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels::half {
namespace {

template <bool kBf16>
inline __m256 widen8(const uint8_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kBf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), as dot_f32 combines its sums.
inline float combine8(__m256 s) {
  const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));  // s_j + s_{j+4}
  const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));                                  // t0 + t2, t1 + t3
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
}

// Weight rows [o0, o0 + W) (all valid) x activation rows [r0, r0 + B). `next` (W rows or
// null) is prefetched at the column being read.
template <bool kBf16, int W, int B>
void tile(const WeightMatrix& w, const float* x, int64_t r0, float* y, int64_t o0, const uint8_t* const* next) {
  const int64_t n = w.n_in, n8 = n / 8 * 8;
  const uint8_t* rows[W];
  for (int i = 0; i < W; ++i) rows[i] = w.row(o0 + i);
  const float* xr[B];
  for (int b = 0; b < B; ++b) xr[b] = x + (r0 + b) * n;
  __m256 s[W][B];
  for (int i = 0; i < W; ++i)
    for (int b = 0; b < B; ++b) s[i][b] = _mm256_setzero_ps();
  for (int64_t k = 0; k < n8; k += 8) {
    if (next != nullptr) {  // a row needs a 64-byte line every 4 steps: a quarter of them a step, into L2
      const int64_t s = k / 8;
      for (int i = static_cast<int>(s & 3); i < W; i += 4) {
        _mm_prefetch(reinterpret_cast<const char*>(next[i] + 16 * (s & ~int64_t{3})), _MM_HINT_T1);
      }
    }
    __m256 xv[B];
    for (int b = 0; b < B; ++b) xv[b] = _mm256_loadu_ps(xr[b] + k);
    for (int i = 0; i < W; ++i) {
      const __m256 wv = widen8<kBf16>(rows[i] + 2 * k);
      for (int b = 0; b < B; ++b) s[i][b] = _mm256_fmadd_ps(wv, xv[b], s[i][b]);
    }
  }
  for (int i = 0; i < W; ++i) {
    for (int b = 0; b < B; ++b) {
      float sum = combine8(s[i][b]);
      if (n8 < n) sum = add_tail(sum, rows[i], kBf16, xr[b], n8, n);
      y[(r0 + b) * w.n_out + o0 + i] = sum;
    }
  }
}

// Weight rows [o0, o0 + W) against every activation row.
template <bool kBf16, int W, int B>
void rows_tile(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o0, int64_t oe) {
  const uint8_t* next[W];
  const bool has_next = o0 + 2 * W <= oe;
  for (int i = 0; has_next && i < W; ++i) next[i] = w.row(o0 + W + i);
  int64_t r = 0;
  for (; r + B <= n_rows; r += B) tile<kBf16, W, B>(w, x, r, y, o0, has_next && r == 0 ? next : nullptr);
  for (; r < n_rows; ++r) tile<kBf16, W, 1>(w, x, r, y, o0, has_next && r == 0 ? next : nullptr);
}

template <bool kBf16, int W, int B>
void range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  int64_t o = ob;
  for (; o + W <= oe; o += W) rows_tile<kBf16, W, B>(w, x, n_rows, y, o, oe);
  for (; o < oe; ++o) rows_tile<kBf16, 1, B>(w, x, n_rows, y, o, oe);
}

template <bool kBf16>
void range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  if (n_rows == 1) {
    range<kBf16, 8, 1>(w, x, n_rows, y, ob, oe);
  } else {
    range<kBf16, 4, 2>(w, x, n_rows, y, ob, oe);
  }
}

}  // namespace

template <bool kBf16>
void range_avx2(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o_begin, int64_t o_end) {
  range<kBf16>(w, x, n_rows, y, o_begin, o_end);
}
template void range_avx2<false>(const WeightMatrix&, const float*, int64_t, float*, int64_t, int64_t);
template void range_avx2<true>(const WeightMatrix&, const float*, int64_t, float*, int64_t, int64_t);

}  // namespace keel::kernels::half

#pragma GCC pop_options
