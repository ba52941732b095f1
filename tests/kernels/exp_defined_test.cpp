// exp_defined: the SIMD forms give the scalar definition's bits on every input class, and the
// definition stays within 2 ulp of the true exponential wherever the result is normal.
#include "kernels/exp_defined.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/cpu.h"

namespace keel::kernels {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Inputs: special values, the clamp and overflow/underflow edges, rounding ties of x·log2e,
// a strided sweep over all float bit patterns in [-110, 95], and random values.
std::vector<float> inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::min(), 1.0f, -1.0f, 88.0f, 88.5f, 88.7228f, 88.72284f,
                          88.8f, 89.0f, 89.5f, -87.33f, -87.34f, -100.0f, -103.97f, -104.0f, -105.0f,
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  for (int k = -150; k <= 130; ++k) {  // x·log2e near k + 0.5 (round-half-even ties)
    const float x = (static_cast<float>(k) + 0.5f) / exp_detail::kLog2e;
    v.push_back(x);
    v.push_back(std::nextafter(x, inf));
    v.push_back(std::nextafter(x, -inf));
  }
  for (uint32_t u = 0; u < 0xffffffffu - 9973u; u += 9973u) {
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isfinite(f) && f > -110.0f && f < 95.0f) v.push_back(f);
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-110.0f, 95.0f);
  for (int i = 0; i < 20000; ++i) v.push_back(d(rng));
  while (v.size() % 16 != 0) v.push_back(0.5f);
  return v;
}

__attribute__((target("avx512f"))) void exp_all_avx512(const std::vector<float>& x, std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); i += 16) {
    _mm512_storeu_ps(y.data() + i, exp_defined_x16(_mm512_loadu_ps(x.data() + i)));
  }
}

__attribute__((target("avx2,fma"))) void exp_all_avx2(const std::vector<float>& x, std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); i += 8) {
    _mm256_storeu_ps(y.data() + i, exp_defined_x8(_mm256_loadu_ps(x.data() + i)));
  }
}

TEST(ExpDefined, Avx512EqualsScalarBitwise) {
  if (!cpu_features().avx512f) GTEST_SKIP() << "no AVX-512 on this machine";
  const std::vector<float> x = inputs();
  std::vector<float> y(x.size());
  exp_all_avx512(x, y);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(bits(y[i]), bits(exp_defined(x[i]))) << "x = " << x[i];
  }
}

TEST(ExpDefined, Avx2EqualsScalarBitwise) {
  if (!cpu_features().avx2 || !cpu_features().fma) GTEST_SKIP() << "no AVX2+FMA on this machine";
  const std::vector<float> x = inputs();
  std::vector<float> y(x.size());
  exp_all_avx2(x, y);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(bits(y[i]), bits(exp_defined(x[i]))) << "x = " << x[i];
  }
}

TEST(ExpDefined, WithinTwoUlpOfTrueExp) {
  double worst = 0.0;
  for (float x : inputs()) {
    const double want = std::exp(static_cast<double>(x));
    const float got = exp_defined(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    if (want > std::numeric_limits<float>::max()) {
      EXPECT_EQ(got, std::numeric_limits<float>::infinity()) << "x = " << x;
      continue;
    }
    if (want < std::numeric_limits<float>::min()) {  // subnormal or zero: absolute error only
      EXPECT_LE(std::fabs(got - want), 2.0 * std::numeric_limits<float>::denorm_min() + 1e-45) << "x = " << x;
      continue;
    }
    const float wf = static_cast<float>(want);
    const double ulp = std::nextafter(wf, std::numeric_limits<float>::infinity()) - wf;
    const double err = std::fabs(static_cast<double>(got) - want) / ulp;
    worst = std::max(worst, err);
    ASSERT_LE(err, 2.0) << "x = " << x << " got " << got << " want " << want;
  }
  RecordProperty("worst_ulp", std::to_string(worst));
}

TEST(ExpDefined, EdgeValues) {
  EXPECT_EQ(exp_defined(0.0f), 1.0f);
  EXPECT_EQ(exp_defined(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_defined(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(exp_defined(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_defined(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_NEAR(exp_defined(1.0f), 2.7182817f, 1e-6f);
}

}  // namespace
}  // namespace keel::kernels
