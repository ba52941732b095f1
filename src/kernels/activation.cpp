#include "kernels/activation.h"

#include "kernels/elementwise_defs.h"
#include "kernels/elementwise_isa.h"

namespace keel::kernels {

float silu(float x) { return elem::silu(x); }
float gelu_tanh(float x) { return elem::gelu_tanh(x); }

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  if (n > 0) elementwise_ops().silu_mul(gate, up, n, out);
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  if (n > 0) elementwise_ops().gelu_tanh_mul(gate, up, n, out);
}

void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit,
                float* out) {
  if (n > 0) elementwise_ops().swiglu_oai(gate, up, n, alpha, limit, out);
}

void softmax(float* x, int64_t n) {
  if (n > 0) elementwise_ops().softmax(x, n);
}

void softcap(float* x, int64_t n, float cap) {
  if (n > 0 && cap > 0.0f) elementwise_ops().softcap(x, n, cap);
}

void add_inplace(float* y, const float* x, int64_t n) {
  if (n > 0) elementwise_ops().add(y, x, n);
}

void add_rows(float* y, const float* b, int64_t n_rows, int64_t n) {
  if (n <= 0) return;
  for (int64_t r = 0; r < n_rows; ++r) elementwise_ops().add(y + r * n, b, n);
}

void scale_inplace(float* y, float s, int64_t n) {
  if (n > 0) elementwise_ops().scale(y, s, n);
}

void mul_inplace(float* y, const float* x, int64_t n) {
  if (n > 0) elementwise_ops().mul(y, x, n);
}

}  // namespace keel::kernels
