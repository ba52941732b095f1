#include "kernels/rope_angles.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "core/error.h"

namespace keel::kernels::rope_detail {

namespace {

// YaRN correction dimension for a rotation count (number of full turns over n_ctx_orig).
double yarn_corr_dim(int64_t n_rot, int64_t n_ctx_orig, double beta, double base) {
  return static_cast<double>(n_rot) *
         std::log(static_cast<double>(n_ctx_orig) / (beta * 2.0 * M_PI)) / (2.0 * std::log(base));
}

// What determines the angles (the mode only changes which dims pair up).
struct AngleKey {
  int64_t n_rot = 0, n_ctx_orig = 0;
  float base = 0, freq_scale = 0, ext_factor = 0, attn_factor = 0, beta_fast = 0, beta_slow = 0;
  std::vector<float> factors;  // copy of freq_factors ([n_rot/2]) or empty

  static AngleKey of(const RopeParams& p) {
    AngleKey k{p.n_rot,      p.n_ctx_orig,  p.base,      p.freq_scale, p.ext_factor,
               p.attn_factor, p.beta_fast, p.beta_slow, {}};
    if (p.freq_factors) k.factors.assign(p.freq_factors, p.freq_factors + p.n_rot / 2);
    return k;
  }
  bool matches(const RopeParams& p) const {
    if (n_rot != p.n_rot || n_ctx_orig != p.n_ctx_orig || base != p.base ||
        freq_scale != p.freq_scale || ext_factor != p.ext_factor ||
        attn_factor != p.attn_factor || beta_fast != p.beta_fast || beta_slow != p.beta_slow) {
      return false;
    }
    if (!p.freq_factors) return factors.empty();
    return !factors.empty() && std::equal(factors.begin(), factors.end(), p.freq_factors);
  }
};

struct CacheEntry {
  AngleKey key;
  std::vector<int64_t> pos;
  std::vector<float> rows;  // [pos.size()][n_rot]
};

// Two parameter sets cover gemma's local/global layers; a few more are cheap.
constexpr size_t kEntries = 4;

}  // namespace

AngleTable angle_table(const RopeParams& p, bool with_magnitude) {
  AngleTable t;
  angle_table(p, with_magnitude, &t);
  return t;
}

void angle_table(const RopeParams& p, bool with_magnitude, AngleTable* out) {
  AngleTable& t = *out;
  const int64_t half = p.n_rot / 2;
  t.low = t.high = 0.0;
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


const float* rope_rows_cos_sin(const RopeParams& p, const int64_t* pos, int64_t n_rows) {
  thread_local std::array<CacheEntry, kEntries> cache;
  thread_local size_t next_victim = 0;
  for (CacheEntry& e : cache) {
    if (static_cast<int64_t>(e.pos.size()) == n_rows && e.key.matches(p) &&
        std::equal(e.pos.begin(), e.pos.end(), pos)) {
      return e.rows.data();
    }
  }
  thread_local AngleTable t;
  angle_table(p, true, &t);  // may throw: before any entry changes
  CacheEntry& e = cache[next_victim];
  next_victim = (next_victim + 1) % kEntries;
  e.key = AngleKey::of(p);
  // Every entry gets room for a decode batch at once, so entries taking turns never grow
  // mid-run (no allocation per decode step).
  constexpr int64_t kMinRows = 64;
  const int64_t room = std::max(n_rows, kMinRows);
  for (CacheEntry& x : cache) {
    x.pos.reserve(static_cast<size_t>(room));
    x.rows.reserve(static_cast<size_t>(room * p.n_rot));
  }
  e.pos.assign(pos, pos + n_rows);
  e.rows.resize(static_cast<size_t>(n_rows * p.n_rot));
  const int64_t half = p.n_rot / 2;
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = e.rows.data() + r * p.n_rot;
    cos_sin_at(p, t, static_cast<double>(pos[r]), row, row + half);
  }
  return e.rows.data();
}

}  // namespace keel::kernels::rope_detail
