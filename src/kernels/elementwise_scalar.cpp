// The scalar table: elementwise_defs.h applied element by element. This is the oracle of
// the SIMD tables; keep it plain.
#include <limits>

#include "kernels/elementwise_defs.h"
#include "kernels/elementwise_isa.h"

namespace keel::kernels {

namespace {

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = elem::silu(gate[i]) * up[i];
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = elem::gelu_tanh(gate[i]) * up[i];
}

void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit,
                float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = elem::swiglu_oai(gate[i], up[i], alpha, limit);
}

void softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = elem::softcap(x[i], cap);
}

// Σ f(x[i]) in elementwise_defs.h's lane structure; f widens to double.
template <class F>
double lane_sum(const float* x, int64_t n, F f) {
  double s[elem::kSumLanes] = {};
  int64_t i = 0;
  for (; i + elem::kSumLanes <= n; i += elem::kSumLanes) {
    for (int j = 0; j < elem::kSumLanes; ++j) s[j] += f(x[i + j]);
  }
  double sum = elem::fold_partials(s);
  for (; i < n; ++i) sum += f(x[i]);
  return sum;
}

double sum_squares(const float* x, int64_t n) {
  return lane_sum(x, n, [](float v) { return static_cast<double>(v) * static_cast<double>(v); });
}

void softmax(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = elem::max_ps(x[i], max);
  for (int64_t i = 0; i < n; ++i) x[i] = exp_defined(x[i] - max);
  const double sum = lane_sum(x, n, [](float v) { return static_cast<double>(v); });
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void scale_mul(const float* x, float scale, const float* w, int64_t n, float* y) {
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  }
}

void add(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void mul(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= x[i];
}

void scale(float* y, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

// Pair (a, b) becomes (a·c − b·s, b·c + a·s): kNormal pairs (2i, 2i+1), kNeox (i, i + n_rot/2).
void rope_rotate(float* v, int64_t n_heads, int64_t head_dim, RopeMode mode, int64_t n_rot,
                 const float* c, const float* s) {
  const int64_t half = n_rot / 2;
  const int64_t stride = mode == RopeMode::kNormal ? 2 : 1;  // a's step
  const int64_t b_off = mode == RopeMode::kNormal ? 1 : half;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* hv = v + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      float* a = hv + i * stride;
      float* b = a + b_off;
      const float x0 = *a, x1 = *b;
      *a = x0 * c[i] - x1 * s[i];
      *b = x1 * c[i] + x0 * s[i];
    }
  }
}

}  // namespace

const ElementwiseOps& elementwise_scalar_ops() {
  static const ElementwiseOps ops{ElemIsa::kScalar, silu_mul, gelu_tanh_mul, swiglu_oai,
                                  softcap,          softmax,  sum_squares,   scale_mul,
                                  add,              mul,      scale,         rope_rotate};
  return ops;
}

}  // namespace keel::kernels
