#include "kernels/dot_simd.h"

#include <immintrin.h>

#include <cmath>

#include "core/cpu.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")
// Only the fused multiply-adds written below; a contracted combine would change the bits.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels {

bool dot_simd_available() {
  static const bool ok = cpu_features().avx2 && cpu_features().fma;
  return ok;
}

float dot_f32_avx2(const float* a, const float* b, int64_t n) {
  __m256 s = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s);
  // ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7))
  const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
  float sum = _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

}  // namespace keel::kernels

#pragma GCC pop_options
