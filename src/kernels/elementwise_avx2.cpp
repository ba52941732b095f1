// AVX2 table of the element-wise kernels: 8 float lanes, 4 double lanes, masked tails.
// The pragmas come before every include so all inlined code shares the target and never
// fuses a multiply with an add (elementwise_simd.h).
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("fp-contract=off")

#include <immintrin.h>

#include "core/cpu.h"
#include "kernels/elementwise_simd.h"
#include "kernels/exp_defined.h"

namespace keel::kernels {

namespace {

struct V256 {
  using F = __m256;
  using M = __m256;  // all-ones lanes where true
  using D = __m256d;
  static constexpr int kLanes = 8;
  static constexpr int kDLanes = 4;

  static __m256i first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F load_n(const float* p, int n) { return _mm256_maskload_ps(p, first(n)); }
  static void store_n(float* p, int n, F v) { _mm256_maskstore_ps(p, first(n), v); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F neg(F a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F exp(F x) { return exp_defined_x8(x); }
  static F abs(F x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  static F copysign(F mag, F sgn) {
    const F sign = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, sgn));
  }
  static M lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static F select(M m, F t, F f) { return _mm256_blendv_ps(f, t, m); }
  static F swap_pairs(F x) { return _mm256_permute_ps(x, 0xB1); }
  static float hmax(F x) {
    const __m128 h = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    const __m128 q = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(q, _mm_shuffle_ps(q, q, 1)));
  }
  static D dzero() { return _mm256_setzero_pd(); }
  static D widen(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  static D dadd(D a, D b) { return _mm256_add_pd(a, b); }
  static D dfma(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
  static void dstore(double* p, D v) { _mm256_storeu_pd(p, v); }
};

}  // namespace

}  // namespace keel::kernels

// The accessor runs on any CPU: it must not execute an instruction of the target above before
// the check (the table is built only when the machine has the ISA).
#pragma GCC pop_options

namespace keel::kernels {

const ElementwiseOps* elementwise_avx2_ops() {
  if (!(cpu_features().avx2 && cpu_features().fma)) return nullptr;
  static const ElementwiseOps ops = simd::make_ops<V256>(ElemIsa::kAvx2);
  return &ops;
}

}  // namespace keel::kernels
