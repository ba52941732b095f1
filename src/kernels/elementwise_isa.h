// Per-ISA tables of the element-wise kernels behind activation.h, norm.h and rope.h.
//
// Every table computes the arithmetic of elementwise_defs.h, so for the same inputs all of
// them give the same bits (NaN payloads aside): the scalar table is the oracle the SIMD ones
// are tested against. The public functions use elementwise_ops(), picked once from
// cpu_features() (KEEL_CPU=scalar|avx2 caps it); tests call each table directly.
//
// Contract: the tables are immutable and the functions pure, so both are thread-safe.
// Preconditions are checked by the public wrappers: n >= 0, pointers valid for n floats,
// cap > 0 for softcap. Outputs may alias inputs exactly (out == gate or out == up).
#pragma once

#include <cstdint>

#include "kernels/rope.h"

namespace keel::kernels {

enum class ElemIsa { kScalar, kAvx2, kAvx512 };

struct ElementwiseOps {
  ElemIsa isa;
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
  void (*gelu_tanh_mul)(const float* gate, const float* up, int64_t n, float* out);
  void (*swiglu_oai)(const float* gate, const float* up, int64_t n, float alpha, float limit,
                     float* out);
  void (*softcap)(float* x, int64_t n, float cap);
  void (*softmax)(float* x, int64_t n);
  // Σ x[i]² in the fixed lane structure of elementwise_defs.h.
  double (*sum_squares)(const float* x, int64_t n);
  // y[i] = (x[i] · scale) · w[i], or x[i] · scale when w is nullptr.
  void (*scale_mul)(const float* x, float scale, const float* w, int64_t n, float* y);
  void (*add)(float* y, const float* x, int64_t n);  // y += x
  void (*mul)(float* y, const float* x, int64_t n);  // y *= x
  void (*scale)(float* y, float s, int64_t n);        // y *= s
  // Rotates the first n_rot dims of each of n_heads heads of v ([n_heads][head_dim]) by the
  // angles whose cos/sin are c, s ([n_rot / 2] each).
  void (*rope_rotate)(float* v, int64_t n_heads, int64_t head_dim, RopeMode mode, int64_t n_rot,
                      const float* c, const float* s);
};

const ElementwiseOps& elementwise_scalar_ops();
// nullptr when this build or machine cannot run that ISA (KEEL_CPU caps count).
const ElementwiseOps* elementwise_avx2_ops();
const ElementwiseOps* elementwise_avx512_ops();
// The best available table, chosen once.
const ElementwiseOps& elementwise_ops();

}  // namespace keel::kernels
