// F16 / BF16 weights (matmul_half.h): every SIMD path must give the defined arithmetic's
// bits — dot_f32's 8 interleaved partial sums, fused multiply-add, pairwise combine, ascending
// tail — on odd sizes: n_in below 8 and with tails, odd n_out (partial tiles, ranges that
// start and end mid-tile), batches 1..45 (decode, small-batch, wide and scratch paths), padded
// row strides, 1/2/3 threads, NaN and Inf. Each ISA implementation is called directly
// (where this machine runs it), and kernels::matmul is checked end to end, so the test
// covers the AVX2 path even on an AVX-512 machine. KEEL_CPU=avx2|scalar also pass.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/cpu.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_bf16dot.h"
#include "kernels/matmul_half.h"
#include "kernels/matmul_half_internal.h"
#include "kernels/matmul_path.h"
#include "tensor/types.h"
#include "kernels/same_bits.h"

// The oracle fuses only where it says so; a contracted sum would change its bits.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels {
namespace {

using tensor::DType;

// The defined arithmetic, written out independently of the library.
float oracle_dot(const uint8_t* row, DType type, const float* x, int64_t n) {
  const auto wk = [&](int64_t k) {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, 2);
    return type == DType::kBF16 ? tensor::bf16_to_fp32(h) : tensor::fp16_to_fp32(h);
  };
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) {
      s[j] = std::fma(wk(k + j), x[k + j], s[j]);
    }
  }
  float sum = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
  for (; k < n; ++k) {
    sum = std::fma(wk(k), x[k], sum);
  }
  return sum;
}

// n_out rows of n_in elements, `pad` bytes between rows, values N(0, 1) (some specials).
struct Weights {
  std::vector<uint8_t> data;
  WeightMatrix w;
  Weights(DType type, int64_t n_in, int64_t n_out, size_t pad, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const size_t rb = tensor::row_bytes(type, n_in), stride = rb + pad;
    data.assign(stride * n_out + 1, 0xA5);
    std::vector<float> row(n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      for (auto& v : row) v = nd(rng);
      tensor::quantize_row(type, row.data(), data.data() + o * stride, n_in);
    }
    w.type = type;
    w.data = data.data();
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_stride = stride;
  }
  void set(int64_t o, int64_t k, float v) {
    const uint16_t h = w.type == DType::kBF16 ? tensor::fp32_to_bf16(v) : tensor::fp32_to_fp16(v);
    std::memcpy(data.data() + o * w.row_stride + 2 * k, &h, 2);
  }
};

std::vector<float> activations(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = nd(rng);
  return x;
}

// y[r][o] of the oracle for rows [ob, oe); other entries left as `fill`.
std::vector<float> oracle(const WeightMatrix& w, const float* x, int64_t n_rows, int64_t ob, int64_t oe,
                          float fill) {
  std::vector<float> y(w.n_out * n_rows, fill);
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t o = ob; o < oe; ++o) y[r * w.n_out + o] = oracle_dot(w.row(o), w.type, x + r * w.n_in, w.n_in);
  return y;
}

using RangeFn = void (*)(const WeightMatrix&, const float*, int64_t, float*, int64_t, int64_t);

struct Isa {
  const char* name;
  RangeFn f16, bf16;
  bool available;
  void run(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) const {
    (w.type == DType::kBF16 ? bf16 : f16)(w, x, n_rows, y, ob, oe);
  }
};

std::vector<Isa> isas() {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.f16c && f.fma;
  return {{"avx2", &half::range_avx2<false>, &half::range_avx2<true>, avx2},
          {"avx512", &half::range_avx512<false>, &half::range_avx512<true>,
           avx2 && f.avx512f && f.avx512bw && f.avx512vl}};
}

std::string where(DType type, const char* isa, int64_t n_in, int64_t n_out, int64_t n_rows) {
  return std::string(tensor::dtype_name(type)) + " " + isa + " n_in " + std::to_string(n_in) + " n_out " +
         std::to_string(n_out) + " rows " + std::to_string(n_rows);
}

class HalfWeights : public ::testing::TestWithParam<DType> {};

// Each ISA's range function on odd shapes, whole and in ranges that cut tiles.
TEST_P(HalfWeights, EachIsaEqualsTheDefinedArithmeticOnOddSizes) {
  const DType type = GetParam();
  std::mt19937 rng(5);
  int ran = 0;
  for (const Isa& isa : isas()) {
    if (!isa.available) continue;
    ++ran;
    for (int64_t n_in : {1, 3, 7, 8, 9, 15, 16, 17, 33, 67, 264}) {
      for (int64_t n_out : {1, 2, 3, 7, 9, 17, 18, 33}) {
        Weights wt(type, n_in, n_out, (n_in % 3) * 2, rng);
        for (int64_t n_rows : {1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 41}) {
          const auto x = activations(n_in * n_rows, rng);
          // Whole matrix, then a range starting and ending inside tiles.
          for (auto [ob, oe] : {std::pair<int64_t, int64_t>{0, n_out}, {n_out / 3, n_out - n_out / 4}}) {
            const auto want = oracle(wt.w, x.data(), n_rows, ob, oe, -7.0f);
            std::vector<float> got(want.size(), -7.0f);
            isa.run(wt.w, x.data(), n_rows, got.data(), ob, oe);
            ASSERT_TRUE(same_bits(want, got)) << where(type, isa.name, n_in, n_out, n_rows) << " range [" << ob
                                               << ", " << oe << ")";
          }
        }
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "no AVX2/F16C on this machine";
}

// Batch 1..45: a row's result does not depend on how many rows share the product (decode,
// small-batch, wide and scratch paths all meet the oracle), on either ISA.
TEST_P(HalfWeights, EveryBatchSizeGivesEachRowTheSameBits) {
  const DType type = GetParam();
  std::mt19937 rng(11);
  const int64_t n_in = 131, n_out = 37;
  Weights wt(type, n_in, n_out, 0, rng);
  const auto x = activations(n_in * 45, rng);
  const auto want = oracle(wt.w, x.data(), 45, 0, n_out, 0.0f);
  for (const Isa& isa : isas()) {
    if (!isa.available) continue;
    for (int64_t n_rows = 1; n_rows <= 45; ++n_rows) {
      std::vector<float> got(n_out * n_rows);
      isa.run(wt.w, x.data(), n_rows, got.data(), 0, n_out);
      ASSERT_TRUE(same_bits(std::vector<float>(want.begin(), want.begin() + n_out * n_rows), got))
          << where(type, isa.name, n_in, n_out, n_rows);
    }
  }
}

// kernels::matmul end to end (the dispatch and the pool's 16-row tasks) on 1, 2, 3
// threads, against the oracle and against the library's reference path.
TEST_P(HalfWeights, MatmulEqualsReferenceOnAnyThreadCount) {
  const DType type = GetParam();
  std::mt19937 rng(7);
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  for (int64_t n_in : {5, 67, 264, 1000}) {
    for (int64_t n_out : {1, 18, 71, 300}) {
      Weights wt(type, n_in, n_out, 0, rng);
      for (int64_t n_rows : {1, 3, 17}) {
        const auto x = activations(n_in * n_rows, rng);
        const auto want = oracle(wt.w, x.data(), n_rows, 0, n_out, 0.0f);
        std::vector<float> ref(want.size());
        {
          ScopedMatmulPath p(MatmulPath::kReference);
          matmul(wt.w, x.data(), n_rows, ref.data(), nullptr);
        }
        ASSERT_TRUE(same_bits(want, ref)) << "reference path " << where(type, "-", n_in, n_out, n_rows);
        // Where BF16 runs on the pair-dot instruction, kernels::matmul gives that path's
        // defined bits instead (matmul_bf16dot_test.cpp checks them against its twin).
        std::vector<float> want_fast = want;
        if (bf16dot_available(wt.w)) {
          const Bf16Rows xb = bf16dot_round_rows(x.data(), n_rows, n_in);
          bf16dot_range_twin(wt.w, xb, n_rows, want_fast.data(), 0, n_out);
        }
        for (ThreadPool& pool : pools) {
          std::vector<float> got(want.size(), -1.0f);
          matmul(wt.w, x.data(), n_rows, got.data(), &pool);
          ASSERT_TRUE(same_bits(want_fast, got)) << where(type, "matmul", n_in, n_out, n_rows) << " threads "
                                                 << pool.size();
        }
      }
    }
  }
}

// NaN and ±Inf in weights and activations propagate as in the oracle (Inf·0 = NaN,
// Inf − Inf = NaN, a lone Inf stays Inf with its sign), in the vector body and the tail.
TEST_P(HalfWeights, NanAndInfPropagateAsInTheOracle) {
  const DType type = GetParam();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(3);
  const int64_t n_in = 45, n_out = 19, n_rows = 10;
  Weights wt(type, n_in, n_out, 0, rng);
  wt.set(0, 3, nan);    // body
  wt.set(1, 44, nan);   // tail
  wt.set(2, 5, inf);    // body, a lone Inf
  wt.set(3, 42, -inf);  // tail
  wt.set(4, 1, inf);
  wt.set(4, 9, -inf);   // same lane, opposite signs: NaN
  wt.set(5, 7, inf);    // meets x = 0 below: NaN
  std::vector<float> x = activations(n_in * n_rows, rng);
  x[1 * n_in + 7] = 0.0f;
  x[2 * n_in + 20] = nan;
  x[3 * n_in + 41] = inf;
  x[4 * n_in + 0] = -inf;
  const auto want = oracle(wt.w, x.data(), n_rows, 0, n_out, 0.0f);
  int specials = 0;
  for (float v : want) specials += !std::isfinite(v);
  ASSERT_GT(specials, 20);  // the setup above really produces NaN and Inf outputs
  for (const Isa& isa : isas()) {
    if (!isa.available) continue;
    for (int64_t rows : {int64_t{1}, int64_t{3}, n_rows}) {
      std::vector<float> got(n_out * rows);
      isa.run(wt.w, x.data(), rows, got.data(), 0, n_out);
      ASSERT_TRUE(same_bits(std::vector<float>(want.begin(), want.begin() + n_out * rows), got))
          << where(type, isa.name, n_in, n_out, rows);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, HalfWeights, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(tensor::dtype_name(info.param)); });

}  // namespace
}  // namespace keel::kernels
