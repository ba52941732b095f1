// Element-wise activations and helpers on f32 rows. Pure and thread-safe; outputs may
// alias inputs where the signature allows (documented per function). n <= 0 does nothing.
//
// Arithmetic is defined in elementwise_defs.h (every exponential is exp_defined) and run by the
// best SIMD table (elementwise_isa.h); every ISA gives the same bits, and each element's result
// depends only on its own inputs (softmax: on its own row), never on the batch around it.
#pragma once

#include <cstdint>

namespace keel::kernels {

float silu(float x);       // x * sigmoid(x) = x / (1 + e^-x)
float gelu_tanh(float x);  // 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))) = x / (1 + e^-2z)

// out[i] = act(gate[i]) * up[i], n elements; out may alias gate or up.
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);
// gpt-oss's clamped SwiGLU: g = min(gate, limit); u = clamp(up, -limit, limit);
// out = g * sigmoid(alpha g) * (u + 1). out may alias gate or up.
void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit,
                float* out);

// In-place softmax of x[n]: max-subtracted, the sum in double in the fixed 32-lane order of
// elementwise_defs.h. A NaN, or an +inf, or all -inf, makes the whole row NaN.
void softmax(float* x, int64_t n);
// In-place soft-capping: x = cap * tanh(x / cap) (tanh_defined, ≤ 3 ulp). cap <= 0 leaves x
// unchanged.
void softcap(float* x, int64_t n, float cap);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);
// y[r][i] += b[i] for n_rows rows of n (bias add)
void add_rows(float* y, const float* b, int64_t n_rows, int64_t n);
// y[i] *= s
void scale_inplace(float* y, float s, int64_t n);
// y[i] *= x[i]
void mul_inplace(float* y, const float* x, int64_t n);

}  // namespace keel::kernels
