// RMSNorm: y = x / sqrt(mean(x²) + eps) * w, per row. Pure, thread-safe; y may alias x.
// The sum of squares is accumulated in double in ascending order (dot.h).
#pragma once

#include <cstdint>

namespace keel::kernels {

// x, y: [n_rows][n]; w: [n] or nullptr for no weight.
void rms_norm(const float* x, const float* w, int64_t n_rows, int64_t n, float eps, float* y);

}  // namespace keel::kernels
