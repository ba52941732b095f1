// F16 / BF16 weights: the SIMD path (matmul_half.h) must give the scalar reference's bits
// on odd sizes (tails of the 8-wide loop, 1..4 weight-row tiles, odd batch counts).
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_half.h"
#include "kernels/matmul_path.h"
#include "tensor/types.h"

namespace keel::kernels {
namespace {

class HalfWeights : public ::testing::TestWithParam<tensor::DType> {};

TEST_P(HalfWeights, SimdEqualsReferenceBitwiseOnOddSizes) {
  const tensor::DType type = GetParam();
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n_in : {1, 7, 8, 67, 264}) {
    for (int64_t n_out : {1, 5, 18}) {
      const size_t rb = tensor::row_bytes(type, n_in);
      std::vector<uint8_t> data(rb * n_out);
      std::vector<float> row(n_in);
      for (int64_t o = 0; o < n_out; ++o) {
        for (auto& v : row) v = nd(rng);
        tensor::quantize_row(type, row.data(), data.data() + o * rb, n_in);
      }
      const auto w = WeightMatrix::packed(type, data.data(), n_in, n_out);
      if (!half_kernel_available(w)) GTEST_SKIP() << "no AVX2/F16C on this machine";
      for (int64_t n_rows : {1, 2, 5}) {
        std::vector<float> x(n_in * n_rows), ref(n_out * n_rows), fast(n_out * n_rows, -1.0f);
        for (auto& v : x) v = nd(rng);
        {
          ScopedMatmulPath p(MatmulPath::kReference);
          matmul(w, x.data(), n_rows, ref.data(), nullptr);
        }
        ThreadPool pool(2);
        matmul(w, x.data(), n_rows, fast.data(), &pool);
        for (size_t i = 0; i < ref.size(); ++i) {
          ASSERT_EQ(std::memcmp(&ref[i], &fast[i], 4), 0)
              << tensor::dtype_name(type) << " n_in " << n_in << " n_out " << n_out << " rows " << n_rows
              << " at " << i << ": " << ref[i] << " vs " << fast[i];
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, HalfWeights, ::testing::Values(tensor::DType::kF16, tensor::DType::kBF16),
                         [](const auto& info) { return std::string(tensor::dtype_name(info.param)); });

}  // namespace
}  // namespace keel::kernels
