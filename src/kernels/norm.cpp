#include "kernels/norm.h"

#include <cmath>

#include "kernels/dot.h"

namespace keel::kernels {

void rms_norm(const float* x, const float* w, int64_t n_rows, int64_t n, float eps, float* y) {
  if (n <= 0) return;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const double mean = sum_squares(xr, n) / static_cast<double>(n);
    const float scale = static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(eps)));
    if (w) {
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * w[i];
    } else {
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale;
    }
  }
}

}  // namespace keel::kernels
