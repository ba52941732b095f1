// AVX-512 twin of quantize_block_q8 (quantize_act.h): per element the same multiply, clamp
// and round-half-even (cvtps2dq under the default MXCSR), so the same int8 values and d.
#include <immintrin.h>

#include <cstdint>

#include "kernels/quantize_act.h"

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl")

namespace keel::kernels::q {

// n a multiple of 16. Returns false (nothing written) when a value is not finite, so the
// caller's scalar path decides what that means.
bool quantize_block_q8_avx512(const float* x, int n, int8_t* q, float* d_out) {
  const __m512 fmax = _mm512_set1_ps(3.40282347e38f);
  __m512 amax = _mm512_setzero_ps();
  __mmask16 finite = 0xffff;
  for (int i = 0; i < n; i += 16) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(x + i));
    finite &= _mm512_cmp_ps_mask(a, fmax, _CMP_LE_OQ);
    amax = _mm512_max_ps(amax, a);
  }
  if (finite != 0xffff) return false;
  const float m = _mm512_reduce_max_ps(amax);
  if (m == 0.0f) {
    for (int i = 0; i < n; ++i) q[i] = 0;
    *d_out = 0.0f;
    return true;
  }
  const __m512 id = _mm512_set1_ps(127.0f / m);
  const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f);
  for (int i = 0; i < n; i += 16) {
    __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), id);
    v = _mm512_max_ps(_mm512_min_ps(v, hi), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(v)));
  }
  *d_out = m / 127.0f;
  return true;
}

}  // namespace keel::kernels::q

#pragma GCC diagnostic pop
#pragma GCC pop_options
