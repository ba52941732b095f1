#include "tensor/quant_k_fit.h"

#include <cmath>

#include "tensor/quant_internal.h"
#include "tensor/types.h"

namespace keel::tensor::detail {
namespace {

// Candidate inverse scales are nmax + kStep * s for s in [-kSteps, kSteps]: enough to move
// the rounding boundaries across every code once for typical data.
constexpr int kSteps = 6;
constexpr float kStep = 0.2f;

double squared_error_affine(const float* x, int n, const uint8_t* L, float scale, float offset) {
  double err = 0.0;
  for (int j = 0; j < n; ++j) {
    const double diff = static_cast<double>(scale) * L[j] + offset - x[j];
    err += diff * diff;
  }
  return err;
}

}  // namespace

void assign_affine(const float* x, int n, int nmax, float scale, float min, uint8_t* L) {
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int j = 0; j < n; ++j) L[j] = static_cast<uint8_t>(round_clamp((x[j] + min) * inv, 0, nmax));
}

void assign_symmetric(const float* x, int n, int lo, int hi, float scale, int8_t* L) {
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int j = 0; j < n; ++j) L[j] = static_cast<int8_t>(round_clamp(x[j] * inv, lo, hi));
}

AffineFit fit_affine(const float* x, int n, int nmax, uint8_t* L) {
  float lo = 0.0f;  // the offset is never positive, so the range always includes 0
  float hi = x[0];
  for (int j = 0; j < n; ++j) {
    lo = std::fmin(lo, x[j]);
    hi = std::fmax(hi, x[j]);
  }
  AffineFit best{0.0f, -lo};
  for (int j = 0; j < n; ++j) L[j] = 0;
  const float range = hi - lo;
  if (!(range > 0.0f) || !std::isfinite(range)) return best;

  best.scale = range / static_cast<float>(nmax);
  assign_affine(x, n, nmax, best.scale, best.min, L);
  double best_err = squared_error_affine(x, n, L, best.scale, -best.min);

  double sx = 0.0, sxx = 0.0;
  for (int j = 0; j < n; ++j) {
    sx += x[j];
    sxx += static_cast<double>(x[j]) * x[j];
  }
  uint8_t cand[256];
  for (int s = -kSteps; s <= kSteps; ++s) {
    const float iscale = (static_cast<float>(nmax) + kStep * static_cast<float>(s)) / range;
    int sl = 0, sl2 = 0;
    float slx = 0.0f;
    for (int j = 0; j < n; ++j) {
      const int l = round_clamp(iscale * (x[j] - lo), 0, nmax);
      cand[j] = static_cast<uint8_t>(l);
      sl += l;
      sl2 += l * l;
      slx += static_cast<float>(l) * x[j];
    }
    // Least squares for x ~= a * L + b.
    const double det = static_cast<double>(n) * sl2 - static_cast<double>(sl) * sl;
    if (det <= 0.0) continue;
    double a = (n * static_cast<double>(slx) - sl * sx) / det;
    double b = (sl2 * sx - sl * static_cast<double>(slx)) / det;
    if (b > 0.0) {  // offset must be <= 0: refit the scale alone
      b = 0.0;
      a = slx / static_cast<double>(sl2);
    }
    if (!(a > 0.0)) continue;
    // Squared error of a * L + b from the sums, without another pass over the data.
    const double err = sxx + a * a * sl2 + n * b * b + 2.0 * a * b * sl - 2.0 * a * slx - 2.0 * b * sx;
    if (err < best_err) {
      best_err = err;
      best.scale = static_cast<float>(a);
      best.min = static_cast<float>(-b);
      for (int j = 0; j < n; ++j) L[j] = cand[j];
    }
  }
  return best;
}

float fit_symmetric(const float* x, int n, int lo, int hi, int8_t* L) {
  const float max = signed_absmax(x, n);
  const float amax = std::fabs(max);
  for (int j = 0; j < n; ++j) L[j] = 0;
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 0.0f;

  float best_scale = 0.0f;
  double best_zero_err = 0.0;  // error of scale 0: sum of squares
  for (int j = 0; j < n; ++j) best_zero_err += static_cast<double>(x[j]) * x[j];
  double best_err = best_zero_err;
  int8_t cand[256];
  // The largest element maps to either end of the code range (the ranges are asymmetric:
  // [-4, 3], [-32, 31]), each with a fan of nearby inverse scales.
  for (int end : {lo, hi}) {
    for (int s = -kSteps; s <= kSteps; ++s) {
      const float target = static_cast<float>(end) + (end < 0 ? -1.0f : 1.0f) * kStep * static_cast<float>(s);
      const float iscale = target / max;
      int sl2 = 0;
      float slx = 0.0f;
      for (int j = 0; j < n; ++j) {
        const int l = round_clamp(iscale * x[j], lo, hi);
        cand[j] = static_cast<int8_t>(l);
        sl2 += l * l;
        slx += static_cast<float>(l) * x[j];
      }
      if (sl2 == 0) continue;
      // With the least-squares scale slx / sl2 the error is sum x^2 - slx^2 / sl2.
      const double err = best_zero_err - static_cast<double>(slx) * slx / sl2;
      if (err < best_err) {
        best_err = err;
        best_scale = slx / static_cast<float>(sl2);
        for (int j = 0; j < n; ++j) L[j] = cand[j];
      }
    }
  }
  return best_scale;
}

uint16_t quantize_sub_scales(const float* v, int n, int levels_max, uint8_t* codes) {
  float max = 0.0f;
  for (int j = 0; j < n; ++j) max = std::fmax(max, v[j]);
  const uint16_t d = fp32_to_fp16(max / static_cast<float>(levels_max));
  const float stored = fp16_to_fp32(d);
  const float inv = (stored > 0.0f && std::isfinite(stored)) ? 1.0f / stored : 0.0f;
  for (int j = 0; j < n; ++j) codes[j] = static_cast<uint8_t>(round_clamp(v[j] * inv, 0, levels_max));
  return d;
}

}  // namespace keel::tensor::detail
