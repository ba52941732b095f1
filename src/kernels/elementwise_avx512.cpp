// AVX-512 table of the element-wise kernels: 16 float lanes, 8 double lanes, masked tails.
// The pragmas come before every include so all inlined code shares the target and never
// fuses a multiply with an add (elementwise_simd.h).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
#pragma GCC optimize("fp-contract=off")

#include <immintrin.h>

#include "core/cpu.h"
#include "kernels/elementwise_simd.h"
#include "kernels/exp_defined.h"

namespace keel::kernels {

namespace {

// GCC 12 warns about its own _mm512_undefined_* inside some intrinsics (false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

struct V512 {
  using F = __m512;
  using M = __mmask16;
  using D = __m512d;
  static constexpr int kLanes = 16;
  static constexpr int kDLanes = 8;

  static __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store_n(float* p, int n, F v) { _mm512_mask_storeu_ps(p, first(n), v); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F neg(F a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.0f)); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F exp(F x) { return exp_defined_x16(x); }
  static F abs(F x) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), x); }
  static F copysign(F mag, F sgn) {
    const F sign = _mm512_set1_ps(-0.0f);
    return _mm512_or_ps(_mm512_andnot_ps(sign, mag), _mm512_and_ps(sign, sgn));
  }
  static M lt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static F select(M m, F t, F f) { return _mm512_mask_blend_ps(m, f, t); }
  static F swap_pairs(F x) { return _mm512_permute_ps(x, 0xB1); }
  static float hmax(F x) { return _mm512_reduce_max_ps(x); }
  static D dzero() { return _mm512_setzero_pd(); }
  static D widen(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  static D dadd(D a, D b) { return _mm512_add_pd(a, b); }
  static D dfma(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  static void dstore(double* p, D v) { _mm512_storeu_pd(p, v); }
};

#pragma GCC diagnostic pop

}  // namespace

}  // namespace keel::kernels

// The accessor runs on any CPU: it must not execute an instruction of the target above before
// the check (the table is built only when the machine has the ISA).
#pragma GCC pop_options

namespace keel::kernels {

const ElementwiseOps* elementwise_avx512_ops() {
  if (!(cpu_features().avx512f && cpu_features().fma)) return nullptr;
  static const ElementwiseOps ops = simd::make_ops<V512>(ElemIsa::kAvx512);
  return &ops;
}

}  // namespace keel::kernels
