// exp_defined — the one exponential that element-wise kernels, softmax and attention use,
// defined as a fixed sequence of IEEE operations so a scalar twin and every SIMD lane give
// the same bits (libm's expf is not vectorisable with equal results).
//
// Definition, for float x:
//   NaN → x.  Otherwise x is clamped to [-104, 89] (outside, the float result is 0 or +inf
//   anyway), then
//     n  = roundeven(x · log2e)                                   (a plain multiply)
//     r  = fma(n, -C1, x);  r = fma(n, -C2, r)                    (C1 + C2 = ln 2, Cody–Waite)
//     p  = P0;  p = fma(p, r, P_k) for P1..P5                     (Horner, Cephes expf minimax)
//     y  = fma(p, r·r, r) + 1
//     result = (y · 2^n1) · 2^n2,  n1 = floor(n / 2), n2 = n − n1  (both normal powers of two,
//     so the scaling rounds only once, at the final underflow/overflow if any)
// Error: ≤ 2 ulp of the true exp over the normal range (tested against std::exp).
//
// Thread-safety: pure functions. The SIMD forms carry their own target attribute, so any
// translation unit may include this header; call them only where cpu_features() allows.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace keel::kernels {

namespace exp_detail {
inline constexpr float kLo = -104.0f, kHi = 89.0f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kC1 = 0.693359375f, kC2 = -2.12194440e-4f;
inline constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                       kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;

inline float pow2i(int32_t k) {  // 2^k for k in [-126, 127]
  const uint32_t bits = static_cast<uint32_t>(k + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
}  // namespace exp_detail

// The scalar definition (the oracle of the SIMD forms).
inline float exp_defined(float x) {
  using namespace exp_detail;
  if (std::isnan(x)) return x;
  x = x < kLo ? kLo : (x > kHi ? kHi : x);
  const float t = x * kLog2e;
  const float n = std::nearbyint(t);  // default rounding mode: to nearest even
  float r = std::fma(n, -kC1, x);
  r = std::fma(n, -kC2, r);
  float p = std::fma(kP0, r, kP1);
  p = std::fma(p, r, kP2);
  p = std::fma(p, r, kP3);
  p = std::fma(p, r, kP4);
  p = std::fma(p, r, kP5);
  const float r2 = r * r;
  const float y = std::fma(p, r2, r) + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1;  // floor(n / 2) (arithmetic shift)
  const int32_t n2 = ni - n1;
  return (y * pow2i(n1)) * pow2i(n2);
}

#if defined(__x86_64__)

// GCC 12 reports its own _mm512_undefined_* inside the conversion intrinsics as
// maybe-uninitialized (a false positive about the header, not this code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

__attribute__((target("avx512f"))) inline __m512 exp_defined_x16(__m512 x) {
  using namespace exp_detail;
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kLo)), _mm512_set1_ps(kHi));
  const __m512 t = _mm512_mul_ps(xc, _mm512_set1_ps(kLog2e));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kC1), xc);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kC2), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kP0), r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  // (y · 2^n1) · 2^n2 is y · 2^n rounded once (y · 2^n1 is exact), which is what vscalefps
  // computes in one instruction (n is integral, so floor(n) = n); 9 fewer operations.
  const __m512 res = _mm512_scalef_ps(y, n);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(nan, res, x);
}

__attribute__((target("avx2,fma"))) inline __m256 exp_defined_x8(__m256 x) {
  using namespace exp_detail;
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLo)), _mm256_set1_ps(kHi));
  const __m256 t = _mm256_mul_ps(xc, _mm256_set1_ps(kLog2e));
  const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kC1), xc);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kC2), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kP0), r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  const __m256 res = _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_ps(res, x, nan);
}

#pragma GCC diagnostic pop

#endif  // __x86_64__

}  // namespace keel::kernels
