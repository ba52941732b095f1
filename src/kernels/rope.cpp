#include "kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace keel::kernels {

namespace {

void check(const RopeParams& p, int64_t head_dim) {
  if (p.n_rot <= 0 || p.n_rot % 2 != 0 || p.n_rot > head_dim) {
    throw Error(ErrorCode::kInvalidArgument,
                "rope: n_rot " + std::to_string(p.n_rot) + " must be even and in (0, head_dim " +
                    std::to_string(head_dim) + "]");
  }
}

// YaRN correction dimension for a rotation count (number of full turns over n_ctx_orig).
double yarn_corr_dim(int64_t n_rot, int64_t n_ctx_orig, double beta, double base) {
  return static_cast<double>(n_rot) *
         std::log(static_cast<double>(n_ctx_orig) / (beta * 2.0 * M_PI)) / (2.0 * std::log(base));
}

void rotate_rows(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, RopeMode mode,
                 int64_t n_rot, const float* cs, const float* sn, int64_t table_stride) {
  const int64_t half = n_rot / 2;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* c = cs + r * table_stride;
    const float* s = sn + r * table_stride;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (r * n_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = mode == RopeMode::kNormal ? 2 * i : i;
        const int64_t b = mode == RopeMode::kNormal ? 2 * i + 1 : i + half;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * c[i] - x1 * s[i];
        v[b] = x0 * s[i] + x1 * c[i];
      }
    }
  }
}

}  // namespace

void rope_cos_sin(const RopeParams& p, double pos, bool with_magnitude, float* cos_out,
                  float* sin_out) {
  const int64_t half = p.n_rot / 2;
  const bool yarn = p.ext_factor != 0.0f;
  double low = 0.0, high = 0.0;
  double mscale = with_magnitude ? p.attn_factor : 1.0;
  if (yarn) {
    if (p.n_ctx_orig <= 0) {
      throw Error(ErrorCode::kInvalidArgument, "rope: YaRN needs n_ctx_orig > 0");
    }
    low = std::max(0.0, std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.base)));
    high = std::min(static_cast<double>(p.n_rot - 1),
                    std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.base)));
    if (with_magnitude) mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
  }
  for (int64_t i = 0; i < half; ++i) {
    double theta_extrap = pos * std::pow(static_cast<double>(p.base),
                                         -2.0 * static_cast<double>(i) / p.n_rot);
    if (p.freq_factors) theta_extrap /= p.freq_factors[i];
    const double theta_interp = theta_extrap * p.freq_scale;
    double theta = theta_interp;
    if (yarn) {
      const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
      const double ramp = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
      theta = theta_interp * (1.0 - ramp) + theta_extrap * ramp;
    }
    cos_out[i] = static_cast<float>(std::cos(theta) * mscale);
    sin_out[i] = static_cast<float>(std::sin(theta) * mscale);
  }
}

void rope(float* x, const int64_t* pos, int64_t n_rows, int64_t n_heads, int64_t head_dim,
          const RopeParams& p) {
  check(p, head_dim);
  const int64_t half = p.n_rot / 2;
  std::vector<float> cs(half), sn(half);
  for (int64_t r = 0; r < n_rows; ++r) {
    rope_cos_sin(p, static_cast<double>(pos[r]), true, cs.data(), sn.data());
    rotate_rows(x + r * n_heads * head_dim, 1, n_heads, head_dim, p.mode, p.n_rot, cs.data(),
                sn.data(), 0);
  }
}

void rope_shift(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t delta,
                const RopeParams& p) {
  check(p, head_dim);
  const int64_t half = p.n_rot / 2;
  std::vector<float> cs(half), sn(half);
  rope_cos_sin(p, static_cast<double>(delta), false, cs.data(), sn.data());
  rotate_rows(x, n_rows, n_heads, head_dim, p.mode, p.n_rot, cs.data(), sn.data(), 0);
}

}  // namespace keel::kernels
