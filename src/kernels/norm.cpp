#include "kernels/norm.h"

#include <cmath>

#include "kernels/elementwise_isa.h"

namespace keel::kernels {

void rms_norm(const float* x, const float* w, int64_t n_rows, int64_t n, float eps, float* y) {
  if (n <= 0) return;
  const ElementwiseOps& ops = elementwise_ops();
  for (int64_t r = 0; r < n_rows; ++r) {
    const double mean = ops.sum_squares(x + r * n, n) / static_cast<double>(n);
    const float scale = static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(eps)));
    ops.scale_mul(x + r * n, scale, w, n, y + r * n);
  }
}

}  // namespace keel::kernels
