#include "kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/elementwise_isa.h"

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

// Everything about the angles that does not depend on the position, computed once per call.
struct AngleTable {
  std::vector<double> inv_freq;  // [n_rot/2] base^(−2i/n_rot)
  double low = 0.0, high = 0.0, mscale = 1.0;
  bool yarn = false;
};

AngleTable angle_table(const RopeParams& p, bool with_magnitude) {
  AngleTable t;
  const int64_t half = p.n_rot / 2;
  t.yarn = p.ext_factor != 0.0f;
  t.mscale = with_magnitude ? p.attn_factor : 1.0;
  if (t.yarn) {
    if (p.n_ctx_orig <= 0) {
      throw Error(ErrorCode::kInvalidArgument, "rope: YaRN needs n_ctx_orig > 0");
    }
    t.low = std::max(0.0, std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.base)));
    t.high = std::min(static_cast<double>(p.n_rot - 1),
                      std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.base)));
    if (with_magnitude) t.mscale *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
  }
  t.inv_freq.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    t.inv_freq[i] = std::pow(static_cast<double>(p.base), -2.0 * static_cast<double>(i) / p.n_rot);
  }
  return t;
}

void cos_sin_at(const RopeParams& p, const AngleTable& t, double pos, float* cos_out,
                float* sin_out) {
  const int64_t half = p.n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    double theta_extrap = pos * t.inv_freq[i];
    if (p.freq_factors) theta_extrap /= p.freq_factors[i];
    const double theta_interp = theta_extrap * p.freq_scale;
    double theta = theta_interp;
    if (t.yarn) {
      const double y = (static_cast<double>(i) - t.low) / std::max(0.001, t.high - t.low);
      const double ramp = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
      theta = theta_interp * (1.0 - ramp) + theta_extrap * ramp;
    }
    cos_out[i] = static_cast<float>(std::cos(theta) * t.mscale);
    sin_out[i] = static_cast<float>(std::sin(theta) * t.mscale);
  }
}

}  // namespace

void rope_cos_sin(const RopeParams& p, double pos, bool with_magnitude, float* cos_out,
                  float* sin_out) {
  cos_sin_at(p, angle_table(p, with_magnitude), pos, cos_out, sin_out);
}

void rope(float* x, const int64_t* pos, int64_t n_rows, int64_t n_heads, int64_t head_dim,
          const RopeParams& p) {
  check(p, head_dim);
  const AngleTable t = angle_table(p, true);
  const ElementwiseOps& ops = elementwise_ops();
  const int64_t half = p.n_rot / 2;
  std::vector<float> cs(half), sn(half);
  for (int64_t r = 0; r < n_rows; ++r) {
    cos_sin_at(p, t, static_cast<double>(pos[r]), cs.data(), sn.data());
    ops.rope_rotate(x + r * n_heads * head_dim, n_heads, head_dim, p.mode, p.n_rot, cs.data(),
                    sn.data());
  }
}

void rope_shift(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t delta,
                const RopeParams& p) {
  check(p, head_dim);
  const int64_t half = p.n_rot / 2;
  std::vector<float> cs(half), sn(half);
  rope_cos_sin(p, static_cast<double>(delta), false, cs.data(), sn.data());
  const ElementwiseOps& ops = elementwise_ops();
  for (int64_t r = 0; r < n_rows; ++r) {
    ops.rope_rotate(x + r * n_heads * head_dim, n_heads, head_dim, p.mode, p.n_rot, cs.data(),
                    sn.data());
  }
}

}  // namespace keel::kernels
