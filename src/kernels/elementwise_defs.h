// The element-wise kernels' arithmetic, defined once as scalar IEEE operation sequences.
// The scalar twin (elementwise_scalar.cpp) calls these; the AVX2 and AVX-512 tables
// (elementwise_simd.h) perform the same operations per lane, so every ISA gives the same bits.
//
// Rules that make that hold: no fused multiply-add except inside exp_defined (its SIMD forms
// fuse the same steps); min/max/clamp written as the comparisons MINPS/MAXPS perform
// (`a < b ? a : b` keeps b on NaN); reductions go through the fixed lane structure below.
//
// Contract: pure inline functions, thread-safe. Internal to kernels/.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/exp_defined.h"

namespace keel::kernels::elem {

// MINPS/MAXPS semantics: the second operand when the comparison is false (also on NaN).
inline float min_ps(float a, float b) { return a < b ? a : b; }
inline float max_ps(float a, float b) { return a > b ? a : b; }

// silu(x) = x · sigmoid(x) = x / (1 + e^−x)
inline float silu(float x) { return x / (1.0f + exp_defined(-x)); }

// gelu_tanh(x) = 0.5x(1 + tanh(z)), z = √(2/π)·x·(1 + 0.044715x²), rewritten with
// 0.5(1 + tanh z) = 1 / (1 + e^−2z) so it needs only the one exponential:
//   t = (0.044715·(x·x)) + 1;  m = (−2√(2/π)·x)·t;  gelu = x / (1 + e^m)
// It is more accurate than the tanh form for x < −3 (no 1 + tanh cancellation); below
// x ≈ −10.07 e^m overflows and the result, truly under 3e-38 in magnitude, is −0.
inline constexpr float kGeluCoef = 0.044715f;
inline constexpr float kGeluNeg2Sqrt2OverPi = -1.59576912160573071176f;  // −2√(2/π)
inline float gelu_tanh(float x) {
  const float t = kGeluCoef * (x * x) + 1.0f;
  const float m = (kGeluNeg2Sqrt2OverPi * x) * t;
  return x / (1.0f + exp_defined(m));
}

// gpt-oss SwiGLU: g = min(gate, limit), u = clamp(up, −limit, limit),
// out = (g / (1 + e^(−alpha·g))) · (u + 1)
inline float swiglu_oai(float gate, float up, float alpha, float limit) {
  const float g = min_ps(limit, gate);                // std::min(gate, limit)
  const float u = max_ps(-limit, min_ps(limit, up));  // std::clamp(up, −limit, limit)
  const float glu = g / (1.0f + exp_defined((-alpha) * g));
  return glu * (u + 1.0f);
}

// tanh with ≤ 3 ulp error (Cephes tanhf's split, own code):
//   |x| < 0.625:  x + x·z·P(z), z = x²  (odd minimax polynomial, Horner, mul then add)
//   otherwise:    1 − 2 / (e^(2|x|) + 1)   (e^(2|x|) = inf gives exactly 1)
inline constexpr float kTanhSmall = 0.625f;
inline constexpr float kTanhP0 = -5.70498872745e-3f, kTanhP1 = 2.06390887954e-2f,
                       kTanhP2 = -5.37397155531e-2f, kTanhP3 = 1.33314422036e-1f,
                       kTanhP4 = -3.33332819422e-1f;
// The sign is copied from x at the end (keeps tanh(−0) = −0; a NaN stays NaN).
inline float tanh_defined(float x) {
  const float ax = std::fabs(x);
  float r;
  if (ax < kTanhSmall) {
    const float z = x * x;
    float p = kTanhP0 * z + kTanhP1;
    p = p * z + kTanhP2;
    p = p * z + kTanhP3;
    p = p * z + kTanhP4;
    r = (p * z) * x + x;
  } else {
    const float e = exp_defined(ax + ax);
    r = 1.0f - 2.0f / (e + 1.0f);
  }
  return std::copysign(r, x);
}

// softcap: cap · tanh(x / cap)
inline float softcap(float x, float cap) { return cap * tanh_defined(x / cap); }

// Fixed reduction structure for row sums (sum of squares in rms_norm, the exponentials' sum in
// softmax): element i, for i < n − n % 32, is widened to double and added to partial sum i % 32
// in ascending order; the 32 partials are folded s[j] += s[j + w] for w = 16, 8, 4, 2, 1; the
// remaining n % 32 elements are added to s[0] in ascending order. Products x·x of floats are
// exact in double, so a SIMD form may use FMA for them.
inline constexpr int kSumLanes = 32;
inline double fold_partials(double* s) {  // s: [kSumLanes], folded in place
  for (int w = kSumLanes / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) s[j] += s[j + w];
  }
  return s[0];
}

}  // namespace keel::kernels::elem
