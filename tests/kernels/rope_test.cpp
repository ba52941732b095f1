#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/rope.h"

namespace keel::kernels {
namespace {

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::cos(0.37 * i) + 0.1f * i;
  return v;
}

// Direct formula for one pair, in double.
void expect_pair(const std::vector<float>& in, const std::vector<float>& out, int64_t a, int64_t b,
                 double theta, double mag = 1.0) {
  const double c = std::cos(theta) * mag, s = std::sin(theta) * mag;
  EXPECT_NEAR(out[a], in[a] * c - in[b] * s, 1e-4);
  EXPECT_NEAR(out[b], in[a] * s + in[b] * c, 1e-4);
}

TEST(Rope, NormalAndNeoxPairs) {
  const int64_t hd = 8, heads = 2, pos = 5;
  for (RopeMode mode : {RopeMode::kNormal, RopeMode::kNeox}) {
    RopeParams p;
    p.mode = mode;
    p.n_rot = hd;
    p.base = 100.0f;
    auto x = ramp(hd * heads), y = x;
    rope(y.data(), &pos, 1, heads, hd, p);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double theta = pos * std::pow(100.0, -2.0 * i / hd);
        const int64_t a = h * hd + (mode == RopeMode::kNormal ? 2 * i : i);
        const int64_t b = h * hd + (mode == RopeMode::kNormal ? 2 * i + 1 : i + hd / 2);
        expect_pair(x, y, a, b, theta);
      }
  }
}

TEST(Rope, PartialRotaryLeavesTailAndUsesFactorsAndScale) {
  const int64_t hd = 12, pos = 9;
  const float factors[2] = {1.0f, 4.0f};
  RopeParams p;
  p.mode = RopeMode::kNeox;
  p.n_rot = 4;
  p.freq_scale = 0.5f;
  p.freq_factors = factors;
  auto x = ramp(hd), y = x;
  rope(y.data(), &pos, 1, 1, hd, p);
  for (int64_t i = 4; i < hd; ++i) EXPECT_EQ(y[i], x[i]);
  expect_pair(x, y, 0, 2, pos * 0.5);
  expect_pair(x, y, 1, 3, pos * std::pow(10000.0, -0.5) / 4.0 * 0.5);
}

TEST(Rope, ShiftEqualsRotationAtNewPositionIncludingYarn) {
  const int64_t hd = 16, heads = 3;
  for (bool yarn : {false, true}) {
    RopeParams p;
    p.mode = RopeMode::kNeox;
    p.n_rot = 10;  // partial
    p.base = 1000.0f;
    if (yarn) {
      p.freq_scale = 1.0f / 32;
      p.ext_factor = 1.0f;
      p.n_ctx_orig = 64;
    }
    auto x = ramp(hd * heads), a = x, b = x;
    const int64_t p0 = 40, p1 = 13;
    rope(a.data(), &p0, 1, heads, hd, p);
    rope_shift(a.data(), 1, heads, hd, p1 - p0, p);
    rope(b.data(), &p1, 1, heads, hd, p);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4) << i;
  }
}

TEST(Rope, YarnMagnitudeFactor) {
  RopeParams p;
  p.mode = RopeMode::kNeox;
  p.n_rot = 8;
  p.freq_scale = 1.0f / 32;
  p.ext_factor = 1.0f;
  p.n_ctx_orig = 4096;
  p.base = 150000.0f;
  std::vector<float> c(4), s(4);
  rope_cos_sin(p, 7.0, true, c.data(), s.data());
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(std::hypot(c[i], s[i]), 1.0 + 0.1 * std::log(32.0), 1e-5);
  rope_cos_sin(p, 7.0, false, c.data(), s.data());
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(std::hypot(c[i], s[i]), 1.0, 1e-6);
  // Highest-frequency pair extrapolates (θ = pos), lowest interpolates (θ = pos·freq_scale).
  rope_cos_sin(p, 7.0, false, c.data(), s.data());
  EXPECT_NEAR(std::atan2(s[0], c[0]), std::remainder(7.0, 2 * M_PI), 1e-5);
}

TEST(Rope, RejectsBadRotaryDims) {
  RopeParams p;
  p.n_rot = 7;
  std::vector<float> x(8);
  int64_t pos = 0;
  EXPECT_THROW(rope(x.data(), &pos, 1, 1, 8, p), Error);
  p.n_rot = 10;
  EXPECT_THROW(rope(x.data(), &pos, 1, 1, 8, p), Error);
}

}  // namespace
}  // namespace keel::kernels
