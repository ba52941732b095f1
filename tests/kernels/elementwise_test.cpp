#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/activation.h"
#include "kernels/norm.h"

namespace keel::kernels {
namespace {

TEST(RmsNorm, MatchesFormulaOnOddSizes) {
  for (int64_t n : {1, 5, 63}) {
    std::vector<float> x(2 * n), w(n), y(2 * n);
    for (int64_t i = 0; i < 2 * n; ++i) x[i] = std::sin(0.7 * i) * (1 + i % 3);
    for (int64_t i = 0; i < n; ++i) w[i] = 0.5f + 0.01f * i;
    rms_norm(x.data(), w.data(), 2, n, 1e-5f, y.data());
    for (int r = 0; r < 2; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
      const double s = 1.0 / std::sqrt(ss / n + 1e-5);
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(y[r * n + i], x[r * n + i] * s * w[i], 1e-5 * (1 + std::abs(y[r * n + i])));
    }
  }
  // In place is allowed.
  std::vector<float> x = {3, 4};
  rms_norm(x.data(), nullptr, 1, 2, 0.0f, x.data());
  EXPECT_NEAR(x[0], 3 / std::sqrt(12.5), 1e-6);
}

TEST(Activation, KnownValues) {
  EXPECT_NEAR(silu(1.0f), 1.0 / (1 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(silu(-20.0f), -20.0 / (1 + std::exp(20.0)), 1e-9);
  EXPECT_NEAR(gelu_tanh(1.0f), 0.841192, 1e-5);
  EXPECT_NEAR(gelu_tanh(-3.0f), -0.00363752, 1e-6);
  float g[3] = {1, -2, 10}, u[3] = {2, 3, -9};
  float o[3];
  swiglu_oai(g, u, 3, 1.702f, 7.0f, o);
  EXPECT_NEAR(o[0], 1 / (1 + std::exp(-1.702)) * 3, 1e-6);
  EXPECT_NEAR(o[2], 7 / (1 + std::exp(-1.702 * 7)) * (-7 + 1), 1e-5);  // both clamped
  silu_mul(g, u, 3, o);
  EXPECT_NEAR(o[1], silu(-2) * 3, 1e-7);
  gelu_tanh_mul(g, u, 3, o);
  EXPECT_NEAR(o[0], gelu_tanh(1) * 2, 1e-7);
}

TEST(Softmax, SumsToOneAndIsShiftInvariant) {
  std::vector<float> x = {1, 2, 3, 1000}, y = {-5, -4, -3, 994};
  softmax(x.data(), 4);
  softmax(y.data(), 4);
  EXPECT_NEAR(std::accumulate(x.begin(), x.end(), 0.0), 1.0, 1e-6);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[i], y[i], 1e-7);
  EXPECT_NEAR(x[3], 1.0, 1e-6);
}

TEST(Softcap, BoundsAndIdentityWhenOff) {
  std::vector<float> x = {0.1f, 100.0f, -100.0f};
  softcap(x.data(), 3, 0.0f);
  EXPECT_EQ(x[1], 100.0f);
  softcap(x.data(), 3, 5.0f);
  EXPECT_NEAR(x[0], 5 * std::tanh(0.02), 1e-7);
  EXPECT_NEAR(x[1], 5.0f, 1e-5);
  EXPECT_NEAR(x[2], -5.0f, 1e-5);
}

TEST(Helpers, AddMulScale) {
  std::vector<float> y = {1, 2, 3, 4}, b = {10, 20};
  add_rows(y.data(), b.data(), 2, 2);
  EXPECT_EQ(y, (std::vector<float>{11, 22, 13, 24}));
  mul_inplace(y.data(), b.data(), 2);
  EXPECT_EQ(y[1], 440);
  scale_inplace(y.data(), 0.5f, 4);
  EXPECT_EQ(y[3], 12);
  add_inplace(y.data(), b.data(), 2);
  EXPECT_EQ(y[0], 65);
}

}  // namespace
}  // namespace keel::kernels
