// The BF16 pair-dot path (matmul_bf16dot.h): the AVX-512 kernel gives its scalar twin's bits
// on odd sizes (n_in below, at and past 32-element chunks, odd n_out and ranges, batches
// 1..40, padded row strides), with NaN, Inf, denormals and products beyond float's range;
// the activation rounding equals tensor::fp32_to_bf16; the twin is a dot product (close to
// a double one); and kernels::matmul on BF16 is batch- and thread-invariant. The kernel
// checks skip where the machine has no AVX-512 BF16.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_bf16dot.h"
#include "tensor/types.h"
#include "kernels/same_bits.h"

namespace keel::kernels {
namespace {

using tensor::DType;

struct Bf16Weights {
  std::vector<uint8_t> data;
  WeightMatrix w;
  Bf16Weights(int64_t n_in, int64_t n_out, size_t pad, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const size_t stride = 2 * static_cast<size_t>(n_in) + pad;
    data.assign(stride * n_out + 1, 0xA5);
    for (int64_t o = 0; o < n_out; ++o) {
      for (int64_t k = 0; k < n_in; ++k) set_at(o, k, nd(rng), stride);
    }
    w.type = DType::kBF16;
    w.data = data.data();
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_stride = stride;
  }
  void set_at(int64_t o, int64_t k, float v, size_t stride) {
    const uint16_t h = tensor::fp32_to_bf16(v);
    std::memcpy(data.data() + o * stride + 2 * k, &h, 2);
  }
  void set(int64_t o, int64_t k, float v) { set_at(o, k, v, w.row_stride); }
};

std::vector<float> activations(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = nd(rng);
  return x;
}

bool kernel_here() {
  WeightMatrix probe;
  probe.type = DType::kBF16;
  return bf16dot_available(probe);
}

std::string where(int64_t n_in, int64_t n_out, int64_t n_rows) {
  return "n_in " + std::to_string(n_in) + " n_out " + std::to_string(n_out) + " rows " + std::to_string(n_rows);
}

TEST(Bf16Dot, KernelEqualsTwinOnOddSizes) {
  if (!kernel_here()) GTEST_SKIP() << "no AVX-512 BF16 here";
  std::mt19937 rng(5);
  for (int64_t n_in : {1, 5, 31, 32, 33, 67, 264, 1000, 4000}) {  // 4000: 40 rows take two passes
    for (int64_t n_out : {1, 3, 18, 71}) {
      Bf16Weights wt(n_in, n_out, n_in % 2 ? 6 : 0, rng);
      for (int64_t n_rows : {1, 2, 3, 4, 5, 17, 40}) {
        const auto x = activations(n_in * n_rows, rng);
        const Bf16Rows xb = bf16dot_round_rows(x.data(), n_rows, n_in);
        std::vector<float> want(n_out * n_rows, -7.0f), got(n_out * n_rows, -7.0f);
        bf16dot_range_twin(wt.w, xb, n_rows, want.data(), 0, n_out);
        bf16dot_range(wt.w, xb, n_rows, got.data(), 0, n_out);
        ASSERT_TRUE(same_bits(want, got)) << where(n_in, n_out, n_rows);
        // A range that starts and ends mid-tile writes only its rows.
        if (n_out > 5) {
          std::vector<float> part(n_out * n_rows, -7.0f), want_part(n_out * n_rows, -7.0f);
          bf16dot_range(wt.w, xb, n_rows, part.data(), 1, n_out - 2);
          bf16dot_range_twin(wt.w, xb, n_rows, want_part.data(), 1, n_out - 2);
          ASSERT_TRUE(same_bits(want_part, part)) << "range " << where(n_in, n_out, n_rows);
        }
      }
    }
  }
}

// Specials in the chunk body and the tail; denormals (read as zero); products past float's
// range (each sum is rounded to float, so -5e38 then +6e38 overflows on the first).
TEST(Bf16Dot, KernelEqualsTwinOnSpecialValues) {
  if (!kernel_here()) GTEST_SKIP() << "no AVX-512 BF16 here";
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float denorm = std::numeric_limits<float>::denorm_min() * 4096, big = 2e38f;
  std::mt19937 rng(9);
  const int64_t n_in = 45, n_out = 9, n_rows = 6;
  Bf16Weights wt(n_in, n_out, 0, rng);
  wt.set(0, 3, nan);
  wt.set(1, 44, inf);
  wt.set(2, 5, inf);
  wt.set(2, 9, -inf);
  wt.set(3, 7, denorm);
  wt.set(3, 8, -denorm);
  wt.set(4, 0, big);  // pair (0, 1): a big positive and a big negative product
  wt.set(4, 1, big);
  wt.set(5, 40, 1e-30f);  // tiny products: sums near the denormal range
  wt.set(5, 41, 1e-30f);
  auto x = activations(n_in * n_rows, rng);
  x[0 * n_in + 0] = 3.0f, x[0 * n_in + 1] = -2.5f;  // row 0, lane 0: -5e38, then +6e38
  x[1 * n_in + 3] = inf;
  x[2 * n_in + 7] = denorm;
  x[3 * n_in + 40] = 1e-9f, x[3 * n_in + 41] = -1e-9f;
  x[4 * n_in + 44] = nan;
  const Bf16Rows xb = bf16dot_round_rows(x.data(), n_rows, n_in);
  std::vector<float> want(n_out * n_rows), got(n_out * n_rows);
  bf16dot_range_twin(wt.w, xb, n_rows, want.data(), 0, n_out);
  bf16dot_range(wt.w, xb, n_rows, got.data(), 0, n_out);
  ASSERT_TRUE(same_bits(want, got));
  EXPECT_TRUE(std::isnan(want[0 * n_out + 0]));
  EXPECT_TRUE(std::isinf(want[0 * n_out + 4]));
}

TEST(Bf16Dot, RoundingEqualsScalarConversion) {
  const float specials[] = {0.0f,  -0.0f, 1.0f, 1.00390625f /* tie */, 1.01171875f /* tie, odd */,
                            3e38f, -3.4e38f, std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                            -1e-40f, 65504.0f};
  std::mt19937 rng(2);
  for (int64_t n_in : {1, 12, 16, 17, 33, 70}) {
    const int64_t n_rows = 3;
    auto x = activations(n_in * n_rows, rng);
    for (size_t i = 0; i < std::size(specials) && i < x.size(); ++i) x[i * 5 % x.size()] = specials[i];
    // Filled in two ranges (as the pool's tasks do) into a buffer of the same shape...
    const Bf16Rows halves = bf16dot_rows_buffer(n_rows, n_in);
    bf16dot_round_into(halves, x.data(), n_in, 1, n_rows);
    bf16dot_round_into(halves, x.data(), n_in, 0, 1);
    const std::vector<uint16_t> by_ranges(halves.data, halves.data + n_rows * halves.stride);
    // ...and in one call (the same thread's scratch again).
    const Bf16Rows xb = bf16dot_round_rows(x.data(), n_rows, n_in);
    EXPECT_EQ(std::vector<uint16_t>(xb.data, xb.data + n_rows * xb.stride), by_ranges);
    ASSERT_EQ(xb.stride % 32, 0);
    ASSERT_GE(xb.stride, n_in);
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t k = 0; k < xb.stride; ++k) {
        const uint16_t want = k < n_in ? tensor::fp32_to_bf16(x[r * n_in + k]) : 0;
        ASSERT_EQ(xb.data[r * xb.stride + k], want) << "row " << r << " k " << k << " n_in " << n_in;
      }
    }
  }
}

TEST(Bf16Dot, TwinIsADotProduct) {
  std::mt19937 rng(4);
  const int64_t n_in = 300, n_out = 7, n_rows = 3;
  Bf16Weights wt(n_in, n_out, 0, rng);
  const auto x = activations(n_in * n_rows, rng);
  const Bf16Rows xb = bf16dot_round_rows(x.data(), n_rows, n_in);
  std::vector<float> y(n_out * n_rows);
  bf16dot_range_twin(wt.w, xb, n_rows, y.data(), 0, n_out);
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < n_in; ++k) {
        uint16_t h;
        std::memcpy(&h, wt.w.row(o) + 2 * k, 2);
        const double p = double(tensor::bf16_to_fp32(h)) * x[r * n_in + k];
        ref += p;
        mag += std::abs(p);
      }
      // Activations carry 8 significant bits: each product is off by at most 2^-9 of itself.
      EXPECT_NEAR(y[r * n_out + o], ref, mag * (1.0 / 512) + 1e-6) << "row " << r << " out " << o;
    }
  }
}

// kernels::matmul on BF16 weights: a row's result does not depend on the batch it came in
// or the thread count (whichever path this machine runs).
TEST(Bf16Dot, MatmulIsBatchAndThreadInvariant) {
  std::mt19937 rng(6);
  const int64_t n_in = 264, n_out = 71, n_rows = 37;
  Bf16Weights wt(n_in, n_out, 0, rng);
  const auto x = activations(n_in * n_rows, rng);
  ThreadPool pool1(1), pool2(2), pool3(3);
  std::vector<float> y(n_out * n_rows), y2(n_out * n_rows), y3(n_out * n_rows), y1(n_out);
  matmul(wt.w, x.data(), n_rows, y.data(), &pool1);
  matmul(wt.w, x.data(), n_rows, y2.data(), &pool2);
  matmul(wt.w, x.data(), n_rows, y3.data(), &pool3);
  ASSERT_TRUE(same_bits(y, y2));
  ASSERT_TRUE(same_bits(y, y3));
  for (int64_t r = 0; r < n_rows; ++r) {
    matmul(wt.w, x.data() + r * n_in, 1, y1.data(), &pool2);
    ASSERT_TRUE(same_bits(std::vector<float>(y.begin() + r * n_out, y.begin() + (r + 1) * n_out), y1)) << r;
  }
}

}  // namespace
}  // namespace keel::kernels
