#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/dot.h"
#include "kernels/matmul.h"
#include "kernels/matmul_path.h"
#include "tensor/types.h"

namespace keel::kernels {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Dot, MatchesDoubleOnOddSizes) {
  for (int64_t n : {0, 1, 3, 7, 8, 9, 31, 33, 127, 1001}) {
    auto a = random_vec(n, 1), b = random_vec(n, 2);
    double ref = 0;
    for (int64_t i = 0; i < n; ++i) ref += static_cast<double>(a[i]) * b[i];
    EXPECT_NEAR(dot_f32(a.data(), b.data(), n), ref, 1e-4 * (1 + std::sqrt(double(n)))) << n;
  }
}

TEST(Dot, SumSquares) {
  auto a = random_vec(37, 3);
  double ref = 0;
  for (float x : a) ref += double(x) * x;
  EXPECT_DOUBLE_EQ(sum_squares(a.data(), 37), ref);
}

// Packs rows of f32 values into `type` (f32 / f16 / bf16 / anything with quantize_row).
std::vector<uint8_t> pack(tensor::DType type, const std::vector<float>& w, int64_t n_in,
                          int64_t n_out) {
  const size_t rb = tensor::row_bytes(type, n_in);
  std::vector<uint8_t> out(rb * n_out);
  for (int64_t r = 0; r < n_out; ++r) {
    tensor::quantize_row(type, w.data() + r * n_in, out.data() + r * rb, n_in);
  }
  return out;
}

struct MatmulCase {
  tensor::DType type;
  int64_t n_in;
};

class MatmulTypes : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulTypes, MatchesDequantizedReferenceAndIsBatchInvariant) {
  const auto [type, n_in] = GetParam();
  // The f32-activation oracle (qmatmul_simd_test.cpp covers the integer path).
  ScopedMatmulPath reference(MatmulPath::kReference);
  const auto& tr = tensor::traits(type);
  if (!tr.has_quantize || !tr.has_dequantize) GTEST_SKIP() << tr.name << " conversions not built";
  const int64_t n_out = 37, n_rows = 7;
  auto wf = random_vec(n_in * n_out, 11, 0.5f);
  auto packed = pack(type, wf, n_in, n_out);
  auto w = WeightMatrix::packed(type, packed.data(), n_in, n_out);
  auto x = random_vec(n_in * n_rows, 12);

  // Reference: dequantize each row, dot in double.
  std::vector<float> deq(n_in);
  std::vector<double> ref(n_rows * n_out);
  for (int64_t o = 0; o < n_out; ++o) {
    weight_row(w, o, deq.data());
    for (int64_t r = 0; r < n_rows; ++r) {
      double s = 0;
      for (int64_t i = 0; i < n_in; ++i) s += double(deq[i]) * x[r * n_in + i];
      ref[r * n_out + o] = s;
    }
  }
  ThreadPool pool1(1), pool3(3);
  std::vector<float> y(n_rows * n_out), y3(n_rows * n_out), y1row(n_out);
  matmul(w, x.data(), n_rows, y.data(), &pool1);
  matmul(w, x.data(), n_rows, y3.data(), &pool3);
  for (int64_t i = 0; i < n_rows * n_out; ++i) {
    EXPECT_NEAR(y[i], ref[i], 1e-3 * (1 + std::abs(ref[i]))) << tr.name << " i=" << i;
    EXPECT_EQ(std::memcmp(&y[i], &y3[i], 4), 0) << "thread count changed bits at " << i;
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    matmul(w, x.data() + r * n_in, 1, y1row.data(), &pool3);
    EXPECT_EQ(std::memcmp(y1row.data(), y.data() + r * n_out, 4 * n_out), 0)
        << tr.name << ": row " << r << " differs between batch of 1 and batch of " << n_rows;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, MatmulTypes,
    ::testing::Values(MatmulCase{tensor::DType::kF32, 67}, MatmulCase{tensor::DType::kF16, 67},
                      MatmulCase{tensor::DType::kBF16, 67}, MatmulCase{tensor::DType::kQ4_0, 96},
                      MatmulCase{tensor::DType::kQ4_1, 96}, MatmulCase{tensor::DType::kQ5_0, 96},
                      MatmulCase{tensor::DType::kQ5_1, 96}, MatmulCase{tensor::DType::kQ8_0, 96},
                      MatmulCase{tensor::DType::kQ2_K, 256}, MatmulCase{tensor::DType::kQ3_K, 256},
                      MatmulCase{tensor::DType::kQ4_K, 512}, MatmulCase{tensor::DType::kQ5_K, 256},
                      MatmulCase{tensor::DType::kQ6_K, 256}, MatmulCase{tensor::DType::kMXFP4, 64}),
    [](const auto& info) { return std::string(tensor::dtype_name(info.param.type)); });

TEST(Matmul, RejectsBadRowIndexAndEmptyWeights) {
  std::vector<float> w(6, 1.0f);
  auto m = WeightMatrix::packed(tensor::DType::kF32, w.data(), 3, 2);
  std::vector<float> row(3);
  EXPECT_THROW(weight_row(m, 2, row.data()), Error);
  WeightMatrix empty;
  empty.n_out = 1;
  float x = 1, y = 0;
  EXPECT_THROW(matmul(empty, &x, 1, &y, nullptr), Error);
}

}  // namespace
}  // namespace keel::kernels
