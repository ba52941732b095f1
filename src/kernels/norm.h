// RMSNorm: y = (x · scale) · w, scale = float(1 / sqrt(mean(x²) + eps)), per row.
// Pure, thread-safe; y may alias x. n <= 0 does nothing.
// The sum of squares is accumulated in double in the fixed 32-lane order of elementwise_defs.h
// (the same bits on every ISA; a row's result never depends on the other rows).
#pragma once

#include <cstdint>

namespace keel::kernels {

// x, y: [n_rows][n]; w: [n] or nullptr for no weight.
void rms_norm(const float* x, const float* w, int64_t n_rows, int64_t n, float eps, float* y);

}  // namespace keel::kernels
