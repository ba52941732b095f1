#include "kernels/dot.h"

#include <cmath>

#include "kernels/dot_simd.h"

namespace keel::kernels {

float dot_f32(const float* a, const float* b, int64_t n) {
  if (dot_simd_available()) return dot_f32_avx2(a, b, n);  // same order, same bits
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) s[j] = std::fma(a[i + j], b[i + j], s[j]);
  }
  float sum = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

double sum_squares(const float* x, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

}  // namespace keel::kernels
