// Accuracy of the element-wise definitions (elementwise_defs.h, run through the public
// functions) against a double-precision evaluation of the mathematical function.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/activation.h"
#include "kernels/elementwise_defs.h"
#include "kernels/norm.h"

namespace keel::kernels {
namespace {

// |got − want| in units of the float spacing at want (denormals: the smallest spacing).
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  // ilogb of zero and NaN is INT_MIN (no exponent to subtract from): the smallest spacing.
  const double spacing = w == 0.0f || std::isnan(w) ? 1.4e-45 : std::max(std::ldexp(1.0, std::ilogb(w) - 23), 1.4e-45);
  return std::abs(static_cast<double>(got) - want) / spacing;
}

// x over [lo, hi]: an even grid plus random points.
std::vector<float> sweep(float lo, float hi, int n) {
  std::vector<float> v;
  for (int i = 0; i <= n; ++i) v.push_back(lo + (hi - lo) * static_cast<float>(i) / n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int i = 0; i < n; ++i) v.push_back(d(rng));
  return v;
}

// act(x[i]) through a gated kernel with up = 1 (the product by 1 is exact).
using GatedFn = void (*)(const float*, const float*, int64_t, float*);
std::vector<float> activate(GatedFn fn, const std::vector<float>& x) {
  std::vector<float> ones(x.size(), 1.0f), y(x.size());
  fn(x.data(), ones.data(), static_cast<int64_t>(x.size()), y.data());
  return y;
}

TEST(ElementwiseAccuracy, SiluWithinFourUlp) {
  const auto x = sweep(-87.0f, 80.0f, 20000);
  const auto y = activate(silu_mul, x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i], want = xd / (1.0 + std::exp(-xd));
    worst = std::max(worst, ulps(y[i], want));
  }
  EXPECT_LE(worst, 4.0);
  EXPECT_EQ(silu(-200.0f), -0.0f);  // e^200 overflows: x / inf
  EXPECT_EQ(silu(200.0f), 200.0f);
}

// The exponent argument m = −2z carries a relative rounding error of a few ulp; e^m turns
// that into |m|·ulp of relative error, so the bound grows with |m|.
TEST(ElementwiseAccuracy, GeluTanhWithinBound) {
  const auto x = sweep(-12.0f, 12.0f, 20000);
  const auto y = activate(gelu_tanh_mul, x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i];
    const double z = std::sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd);
    // 0.5x(1 + tanh z) in the form without cancellation (1 + tanh z loses all digits in
    // double once z < −18).
    const double want = xd / (1.0 + std::exp(-2.0 * z));
    const double m = std::abs(2.0 * z);
    // Below x ≈ −10.07, e^m overflows and the true result (< 3e-38) comes out as −0.
    if (m > 88.7 && std::abs(want) < 3e-38 && y[i] == 0.0f) continue;
    const double excess = ulps(y[i], want) / (4.0 + 3.0 * m);
    worst = std::max(worst, excess);
  }
  EXPECT_LE(worst, 1.0);
  EXPECT_EQ(gelu_tanh(-11.0f), -0.0f);
  EXPECT_EQ(gelu_tanh(20.0f), 20.0f);
  EXPECT_NEAR(gelu_tanh(1.0f), 0.841192, 1e-6);
}

TEST(ElementwiseAccuracy, TanhWithinThreeUlpAndSaturates) {
  double worst = 0;
  for (float x : sweep(-12.0f, 12.0f, 40000)) {
    worst = std::max(worst, ulps(elem::tanh_defined(x), std::tanh(static_cast<double>(x))));
  }
  for (float x : sweep(-1e-3f, 1e-3f, 2000)) {  // tiny arguments keep relative accuracy
    worst = std::max(worst, ulps(elem::tanh_defined(x), std::tanh(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 3.0);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(elem::tanh_defined(inf), 1.0f);
  EXPECT_EQ(elem::tanh_defined(-inf), -1.0f);
  EXPECT_EQ(elem::tanh_defined(100.0f), 1.0f);
  EXPECT_TRUE(std::signbit(elem::tanh_defined(-0.0f)));
  EXPECT_TRUE(std::isnan(elem::tanh_defined(std::numeric_limits<float>::quiet_NaN())));
}

TEST(ElementwiseAccuracy, SoftcapMatchesDouble) {
  auto x = sweep(-300.0f, 300.0f, 5000);
  const auto in = x;
  softcap(x.data(), static_cast<int64_t>(x.size()), 30.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = 30.0 * std::tanh(static_cast<double>(in[i]) / 30.0);
    ASSERT_LE(ulps(x[i], want), 5.0) << in[i];
  }
}

TEST(ElementwiseAccuracy, SwigluOaiMatchesDouble) {
  const auto g = sweep(-20.0f, 20.0f, 5000), u = sweep(-9.0f, 9.0f, 5000);
  std::vector<float> y(g.size());
  swiglu_oai(g.data(), u.data(), static_cast<int64_t>(g.size()), 1.702f, 7.0f, y.data());
  for (size_t i = 0; i < g.size(); ++i) {
    const double gd = std::min<double>(g[i], 7.0), ud = std::clamp<double>(u[i], -7.0, 7.0);
    const double want = gd / (1.0 + std::exp(-1.702 * gd)) * (ud + 1.0);
    // The exponent's rounding is amplified by |alpha·g| (as for gelu); the (u + 1) factor
    // loses relative accuracy near u = −1.
    const double bound = 6.0 + std::abs(1.702 * gd) +
                         (std::abs(ud) + 1.0) / std::max(std::abs(ud + 1.0), 1e-30);
    ASSERT_LE(ulps(y[i], want), bound) << g[i] << " " << u[i];
  }
}

TEST(ElementwiseAccuracy, SoftmaxMatchesDouble) {
  for (int64_t n : {1, 3, 31, 32, 33, 1000, 4099}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> d(0.0f, 6.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = d(rng);
    const auto in = x;
    softmax(x.data(), n);
    double mx = -INFINITY, sum = 0;
    for (float v : in) mx = std::max<double>(mx, v);
    for (float v : in) sum += std::exp(v - mx);
    for (int64_t i = 0; i < n; ++i) {
      // x − max is rounded to float; e^d amplifies that by |d|.
      const double d = in[i] - mx;
      ASSERT_LE(ulps(x[i], std::exp(d) / sum), 6.0 + std::abs(d)) << "n " << n << " i " << i;
    }
  }
}

TEST(ElementwiseAccuracy, RmsNormMatchesDouble) {
  for (int64_t n : {1, 7, 64, 2051}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::normal_distribution<float> d(0.0f, 50.0f);
    std::vector<float> x(n), w(n), y(n);
    for (auto& v : x) v = d(rng);
    for (auto& v : w) v = 1.0f + d(rng) / 100.0f;
    rms_norm(x.data(), w.data(), 1, n, 1e-5f, y.data());
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_LE(ulps(y[i], x[i] * scale * w[i]), 2.0) << "n " << n << " i " << i;
    }
  }
}

}  // namespace
}  // namespace keel::kernels
