#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kernels/elementwise_isa.h"
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

// rope() on rows == rope_cos_sin at each row's position + the scalar rotation, bitwise,
// whatever the per-thread angle cache holds: parameter sets beyond its capacity, positions
// that change, and freq_factors whose contents change behind the same pointer.
TEST(Rope, EqualsDefinitionBitwiseWhateverTheCacheHolds) {
  const int64_t hd = 64, heads = 2, n_rows = 5;
  std::vector<float> factors(32, 1.0f);  // [n_rot/2]
  std::vector<RopeParams> sets;
  for (int k = 0; k < 6; ++k) {
    RopeParams p;
    p.mode = k % 2 ? RopeMode::kNeox : RopeMode::kNormal;
    p.n_rot = k == 5 ? 32 : 64;
    p.base = 10000.0f + 1000.0f * k;
    if (k == 1 || k == 4) p.freq_factors = factors.data();
    if (k == 3) {
      p.ext_factor = 1.0f;
      p.freq_scale = 0.25f;
      p.n_ctx_orig = 512;
    }
    sets.push_back(p);
  }
  std::vector<float> c(32), s(32);
  uint32_t rng = 1;  // a fixed walk over (set, positions), mostly cache hits
  for (int step = 0; step < 200; ++step) {
    rng = rng * 1664525u + 1013904223u;
    const size_t k = (rng >> 8) % (step < 100 ? 3 : sets.size());
    const int64_t shift = (rng >> 16) % 2 ? 100 : 0;
    if (step % 17 == 16) factors[3] = 2.5f + static_cast<float>(step);  // same pointer
    const RopeParams& p = sets[k];
    std::vector<int64_t> pos(n_rows);
    for (int64_t r = 0; r < n_rows; ++r) pos[r] = 7 * r + shift;
    auto got = ramp(n_rows * heads * hd), want = got;
    rope(got.data(), pos.data(), n_rows, heads, hd, p);
    for (int64_t r = 0; r < n_rows; ++r) {
      rope_cos_sin(p, static_cast<double>(pos[r]), true, c.data(), s.data());
      elementwise_scalar_ops().rope_rotate(want.data() + r * heads * hd, heads, hd, p.mode,
                                           p.n_rot, c.data(), s.data());
    }
    ASSERT_EQ(std::memcmp(got.data(), want.data(), 4 * got.size()), 0)
        << "step " << step << " set " << k;
  }
}

// A row's result does not depend on the rows around it.
TEST(Rope, RowsIndependentOfBatch) {
  RopeParams p;
  p.n_rot = 64;
  const int64_t hd = 64, heads = 4;
  const std::vector<int64_t> pos = {3, 9, 200, 4097};
  auto all = ramp(pos.size() * heads * hd), one = all;
  rope(all.data(), pos.data(), static_cast<int64_t>(pos.size()), heads, hd, p);
  for (size_t r = 0; r < pos.size(); ++r) rope(one.data() + r * heads * hd, &pos[r], 1, heads, hd, p);
  EXPECT_EQ(std::memcmp(all.data(), one.data(), 4 * all.size()), 0);
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
