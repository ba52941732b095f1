#include "kernels/matmul_half.h"

#include <immintrin.h>

#include "core/cpu.h"
#include "kernels/matmul.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
// The reference multiplies then adds; a fused multiply-add would change the bits.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels {
namespace {

constexpr int kRowTile = 4;    // weight rows in flight (hides the add latency on decode)
constexpr int kBatchTile = 2;  // activation rows sharing each widened weight vector

template <bool kBf16>
inline __m256 widen8(const uint8_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kBf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

template <bool kBf16>
inline float widen1(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return kBf16 ? tensor::bf16_to_fp32(h) : tensor::fp16_to_fp32(h);
}

// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), as dot_f32 combines its sums.
inline float combine(__m256 s) {
  const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));  // s_j + s_{j+4}
  const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));                                  // t0 + t2, t1 + t3
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
}

template <bool kBf16, int W, int B>
void tile(const WeightMatrix& w, const float* x, int64_t r0, float* y, int64_t o0) {
  const int64_t n = w.n_in, n8 = n / 8 * 8;
  __m256 s[W][B];
  for (int i = 0; i < W; ++i)
    for (int b = 0; b < B; ++b) s[i][b] = _mm256_setzero_ps();
  for (int64_t k = 0; k < n8; k += 8) {
    __m256 xv[B];
    for (int b = 0; b < B; ++b) xv[b] = _mm256_loadu_ps(x + (r0 + b) * n + k);
    for (int i = 0; i < W; ++i) {
      const __m256 wv = widen8<kBf16>(w.row(o0 + i) + 2 * k);
      for (int b = 0; b < B; ++b) s[i][b] = _mm256_add_ps(s[i][b], _mm256_mul_ps(wv, xv[b]));
    }
  }
  for (int i = 0; i < W; ++i) {
    for (int b = 0; b < B; ++b) {
      float sum = combine(s[i][b]);
      const float* xr = x + (r0 + b) * n;
      for (int64_t k = n8; k < n; ++k) {
        const float prod = widen1<kBf16>(w.row(o0 + i) + 2 * k) * xr[k];
        sum += prod;
      }
      y[(r0 + b) * w.n_out + o0 + i] = sum;
    }
  }
}

template <bool kBf16, int W>
void rows_tile(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o0) {
  int64_t r = 0;
  for (; r + kBatchTile <= n_rows; r += kBatchTile) tile<kBf16, W, kBatchTile>(w, x, r, y, o0);
  for (; r < n_rows; ++r) tile<kBf16, W, 1>(w, x, r, y, o0);
}

template <bool kBf16>
void range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  int64_t o = ob;
  for (; o + kRowTile <= oe; o += kRowTile) rows_tile<kBf16, kRowTile>(w, x, n_rows, y, o);
  for (; o < oe; ++o) rows_tile<kBf16, 1>(w, x, n_rows, y, o);
}

}  // namespace

bool half_kernel_available(const WeightMatrix& w) {
  const CpuFeatures& f = cpu_features();
  return (w.type == tensor::DType::kF16 || w.type == tensor::DType::kBF16) && f.avx2 && f.f16c && f.fma;
}

void matmul_half_range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o_begin,
                       int64_t o_end) {
  if (w.type == tensor::DType::kBF16) {
    range<true>(w, x, n_rows, y, o_begin, o_end);
  } else {
    range<false>(w, x, n_rows, y, o_begin, o_end);
  }
}

}  // namespace keel::kernels

#pragma GCC pop_options
