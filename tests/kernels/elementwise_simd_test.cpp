// SIMD twins that must give their scalar oracle's exact bits: the activation quantizer,
// the KV row widening used by attention, and dot_f32 (odd sizes, ties, zero blocks).
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/cpu.h"
#include "kernels/dot.h"
#include "kernels/dot_simd.h"
#include "kernels/quantize_act.h"
#include "kernels/widen.h"
#include "tensor/types.h"

namespace keel::kernels {
namespace {

std::vector<float> normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(QuantizerSimd, EqualsScalarBitwise) {
  for (int n : {32, 256}) {
    for (uint32_t seed = 0; seed < 50; ++seed) {
      auto x = normal(n, seed);
      if (seed % 5 == 1) {  // exact halves after scaling: amax 127 makes id 1
        for (int i = 0; i < n; ++i) x[i] = float(i % 20) - 9.5f;
        x[0] = 127.0f;
      }
      if (seed % 5 == 2) std::fill(x.begin(), x.end(), 0.0f);
      if (seed % 5 == 3) x[seed % n] = -1e30f;
      std::vector<int8_t> a(n), b(n);
      const float da = q::quantize_block_q8(x.data(), n, a.data());
      const float db = q::quantize_block_q8_scalar(x.data(), n, b.data());
      ASSERT_EQ(std::memcmp(&da, &db, 4), 0) << n << " seed " << seed;
      ASSERT_EQ(a, b) << n << " seed " << seed;
    }
  }
}

TEST(WidenRow, EqualsDequantizeRowBitwise) {
  for (tensor::DType t : {tensor::DType::kF16, tensor::DType::kBF16, tensor::DType::kQ8_0}) {
    for (int64_t n : {32, 64, 96, 160}) {
      if (t != tensor::DType::kQ8_0) n += 3;  // plain types: an odd tail after the 8-wide loop
      const auto x = normal(n, 7);
      std::vector<uint8_t> raw(tensor::row_bytes(t, n));
      tensor::quantize_row(t, x.data(), raw.data(), n);
      std::vector<float> a(n), b(n);
      widen_row(t, raw.data(), a.data(), n);
      tensor::dequantize_row(t, raw.data(), b.data(), n);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), 4 * n), 0) << tensor::dtype_name(t) << " n " << n;
    }
  }
}

// dot.h's documented order, written out as the oracle.
float dot_oracle(const float* a, const float* b, int64_t n) {
  float s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) {
      s[j] = std::fma(a[i + j], b[i + j], s[j]);
    }
  }
  float sum = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
  for (; i < n; ++i) {
    sum = std::fma(a[i], b[i], sum);
  }
  return sum;
}

TEST(DotSimd, EqualsDocumentedOrderBitwise) {
  if (!dot_simd_available()) GTEST_SKIP() << "no AVX2";
  for (int64_t n : {0, 1, 7, 8, 9, 31, 64, 67, 1001}) {
    const auto a = normal(n, 1), b = normal(n, 2);
    const float x = dot_f32_avx2(a.data(), b.data(), n), y = dot_oracle(a.data(), b.data(), n);
    EXPECT_EQ(std::memcmp(&x, &y, 4), 0) << n << ": " << x << " vs " << y;
    const float z = dot_f32(a.data(), b.data(), n);
    EXPECT_EQ(std::memcmp(&x, &z, 4), 0) << n;
  }
}

}  // namespace
}  // namespace keel::kernels
