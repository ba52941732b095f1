// The integer matmul path: SIMD panel kernels against the scalar twin (bitwise, odd sizes,
// odd batch counts, hostile block contents), the twin against the f32 reference (within the
// bound 8-bit activation rounding allows), batch and thread-count invariance through
// kernels::matmul, and the activation quantizer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_path.h"
#include "kernels/qmatmul.h"
#include "kernels/repack.h"
#include "tensor/types.h"

namespace keel::kernels {
namespace {

using tensor::DType;

std::vector<float> normal(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<uint8_t> quantize(DType type, const std::vector<float>& w, int64_t n_in, int64_t n_out) {
  const size_t rb = tensor::row_bytes(type, n_in);
  std::vector<uint8_t> out(rb * n_out);
  for (int64_t r = 0; r < n_out; ++r) tensor::quantize_row(type, w.data() + r * n_in, out.data() + r * rb, n_in);
  return out;
}

// Random bytes with every f16 scale field replaced by a finite value: exercises q = -128,
// negative q6_K scales, 6-bit scale/min extremes.
std::vector<uint8_t> hostile(DType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  const auto& tr = tensor::traits(type);
  std::vector<uint8_t> out(tensor::row_bytes(type, n_in) * n_out);
  std::mt19937 rng(seed);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  const size_t n_blocks = out.size() / tr.block_bytes;
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = out.data() + b * tr.block_bytes;
    auto put = [&](size_t off) {
      const uint16_t h = tensor::fp32_to_fp16(std::ldexp(float(rng() % 2000) - 1000.0f, -14));
      std::memcpy(blk + off, &h, 2);
    };
    if (type == DType::kQ6_K) {
      put(208);
    } else {
      put(0);
      if (type == DType::kQ4_K || type == DType::kQ5_K) put(2);
    }
  }
  return out;
}

struct Case {
  DType type;
  int64_t n_in;
};

class IntegerPath : public ::testing::TestWithParam<Case> {};

void expect_bitwise(const float* a, const float* b, int64_t n, const std::string& what) {
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(a + i, b + i, 4), 0) << what << " at " << i << ": " << a[i] << " vs " << b[i];
  }
}

// Every SIMD family this machine has, against the twin, on the packed panels directly.
void check_kernels_against_twin(DType type, const std::vector<uint8_t>& data, int64_t n_in,
                                int64_t n_out, const std::vector<float>& x, int64_t n_rows) {
  const auto w = WeightMatrix::packed(type, data.data(), n_in, n_out);
  q::ActBuffer buf;
  const q::ActRows a = buf.quantize(x.data(), n_rows, n_in, q::format_for(type)->act);
  std::vector<float> twin(n_rows * n_out);
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) twin[r * n_out + o] = q::twin_dot(type, w.row(o), a, r);
  }
  const q::PackedMatrix pm(w);
  int tested = 0;
  for (q::Isa isa : {q::Isa::kAvx2, q::Isa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(q::best_isa())) continue;
    const q::PanelFn fn = q::panel_kernel(isa, type);
    if (!fn) continue;
    ++tested;
    std::vector<float> y(n_rows * n_out, -1.0f);
    for (int64_t p = 0; p < pm.n_panels(); ++p) {
      const int n_valid = static_cast<int>(std::min<int64_t>(16, n_out - 16 * p));
      // Odd row splits: the kernel's row tiling must not matter.
      fn(pm.panel(p), pm.n_blocks(), a, 0, n_rows / 3, y.data() + 16 * p, n_out, n_valid, {});
      // A prefetch hint (here the panel itself) never changes a result.
      fn(pm.panel(p), pm.n_blocks(), a, n_rows / 3, n_rows, y.data() + 16 * p, n_out, n_valid,
         {pm.panel(p), pm.panel_bytes()});
    }
    expect_bitwise(y.data(), twin.data(), n_rows * n_out,
                   std::string(tensor::dtype_name(type)) + " " + q::isa_name(isa) + " vs twin");
    // The two-panel kernel (prefill): pairs (p, p + 1), an odd last panel by the single one.
    const q::PanelFn pair = q::panel_pair_kernel(isa, type);
    if (!pair) continue;
    std::fill(y.begin(), y.end(), -1.0f);
    for (int64_t p = 0; p < pm.n_panels(); p += 2) {
      const bool two = p + 1 < pm.n_panels();
      const int n_valid = static_cast<int>(std::min<int64_t>(16, n_out - 16 * (two ? p + 1 : p)));
      const q::PanelFn f = two ? pair : fn;
      f(pm.panel(p), pm.n_blocks(), a, 0, n_rows / 3, y.data() + 16 * p, n_out, n_valid, {});
      f(pm.panel(p), pm.n_blocks(), a, n_rows / 3, n_rows, y.data() + 16 * p, n_out, n_valid,
        {pm.panel(p), pm.panel_bytes()});
    }
    expect_bitwise(y.data(), twin.data(), n_rows * n_out,
                   std::string(tensor::dtype_name(type)) + " " + q::isa_name(isa) + " pairs vs twin");
  }
  if (tested == 0) std::printf("[qmatmul] %s: no SIMD kernel on this machine\n", tensor::dtype_name(type));
}

TEST_P(IntegerPath, SimdKernelsEqualTwinBitwiseOnOddSizes) {
  const auto [type, n_in] = GetParam();
  for (int64_t n_out : {1, 15, 29, 37}) {
    // 19 rows: calls of 6 and 13 rows, so the tiles of decode batches (up to 8 rows) and
    // of prefill chunks are both run (q4_K pairs tile them differently).
    for (int64_t n_rows : {1, 3, 7, 19}) {
      const auto w = quantize(type, normal(n_in * n_out, 7 + n_out, 0.5f), n_in, n_out);
      check_kernels_against_twin(type, w, n_in, n_out, normal(n_in * n_rows, 9 + n_rows), n_rows);
    }
  }
}

TEST_P(IntegerPath, SimdKernelsEqualTwinOnHostileBlocks) {
  const auto [type, n_in] = GetParam();
  const int64_t n_out = 33, n_rows = 5;
  auto x = normal(n_in * n_rows, 3, 4.0f);
  x[0] = 1e4f;  // one large activation: most quants of the block are small
  check_kernels_against_twin(type, hostile(type, n_in, n_out, 17), n_in, n_out, x, n_rows);
}

// |twin - exact| is bounded by the activation rounding: each |x_i - dx_b q_i| <= dx_b / 2,
// so the error is at most sum_b dx_b / 2 * sum_{i in b} |w_i| (plus f32 accumulation slack).
TEST_P(IntegerPath, TwinIsWithinActivationRoundingOfReference) {
  const auto [type, n_in] = GetParam();
  const int64_t n_out = 21, n_rows = 3;
  const auto data = quantize(type, normal(n_in * n_out, 5, 0.5f), n_in, n_out);
  const auto w = WeightMatrix::packed(type, data.data(), n_in, n_out);
  const auto x = normal(n_in * n_rows, 6);
  q::ActBuffer buf;
  const q::ActRows a = buf.quantize(x.data(), n_rows, n_in, q::format_for(type)->act);
  const int64_t ab = q::act_block(a.format);
  std::vector<float> deq(n_in);
  for (int64_t o = 0; o < n_out; ++o) {
    weight_row(w, o, deq.data());
    for (int64_t r = 0; r < n_rows; ++r) {
      double exact = 0, bound = 0, mag = 0;
      for (int64_t i = 0; i < n_in; ++i) {
        exact += double(deq[i]) * x[r * n_in + i];
        bound += std::fabs(deq[i]) * a.row_d(r)[i / ab] * 0.5;
        mag += std::fabs(double(deq[i]) * x[r * n_in + i]);
      }
      const double got = q::twin_dot(type, w.row(o), a, r);
      EXPECT_LE(std::fabs(got - exact), bound * 1.0001 + 1e-5 * mag) << "row " << r << " out " << o;
      EXPECT_GT(bound, 0.0);
    }
  }
}

TEST_P(IntegerPath, MatmulIsBatchAndThreadInvariantAndEqualsTwin) {
  const auto type = GetParam().type;
  // Big enough that quantization and panels are spread over the pool's threads.
  const int64_t n_in = GetParam().n_in * 8, n_out = 83, n_rows = 37;
  const auto data = quantize(type, normal(n_in * n_out, 15, 0.5f), n_in, n_out);
  const auto w = WeightMatrix::packed(type, data.data(), n_in, n_out);
  const auto x = normal(n_in * n_rows, 16);
  ThreadPool pool1(1), pool2(2), pool3(3);
  std::vector<float> y(n_rows * n_out), y3(n_rows * n_out), twin(n_rows * n_out), one(n_out);
  matmul(w, x.data(), n_rows, y.data(), &pool2);
  matmul(w, x.data(), n_rows, y3.data(), &pool3);
  {
    ScopedMatmulPath path(MatmulPath::kTwin);
    matmul(w, x.data(), n_rows, twin.data(), &pool1);
  }
  expect_bitwise(y.data(), y3.data(), n_rows * n_out, "2 vs 3 threads");
  expect_bitwise(y.data(), twin.data(), n_rows * n_out, "dispatched vs twin");
  // 9 rows: a decode batch, paired or single panels by panel_pair_min_rows.
  std::vector<float> y9(9 * n_out);
  matmul(w, x.data(), 9, y9.data(), &pool2);
  expect_bitwise(y9.data(), y.data(), 9 * n_out, "9-row vs 37-row batch");
  for (int64_t r = 0; r < n_rows; ++r) {
    matmul(w, x.data() + r * n_in, 1, one.data(), &pool2);
    expect_bitwise(one.data(), y.data() + r * n_out, n_out, "1-row vs 37-row batch, row " + std::to_string(r));
  }
  // A view without a pack cache (built by hand) runs the twin: same bits.
  WeightMatrix bare = w;
  bare.pack = nullptr;
  std::vector<float> yb(n_rows * n_out);
  matmul(bare, x.data(), n_rows, yb.data(), &pool2);
  expect_bitwise(yb.data(), y.data(), n_rows * n_out, "unpacked view");
}

// matmul_shared_input: one job over several matrices of one input gives each matrix the bits
// of its own matmul, whether the matrices share an activation format (one quantization) or
// not (one by one): q/k/v with odd n_out (a short last panel), 1 row (decode) and 37.
// BF16 matrices share one rounding of x and one job of row tasks across the matrices.
TEST(MatmulSharedInput, EqualsOneMatmulPerMatrix) {
  const int64_t n_in = 512;
  const std::vector<std::vector<DType>> sets = {
      {DType::kQ4_0, DType::kQ4_0, DType::kQ4_0}, {DType::kQ8_0, DType::kQ4_0},
      {DType::kQ4_K, DType::kQ4_K, DType::kQ6_K}, {DType::kQ4_K, DType::kQ4_0},
      {DType::kF16, DType::kQ8_0}, {DType::kQ5_K},
      // BF16 (the pair-dot path where the machine has it: one rounding, one job)
      {DType::kBF16, DType::kBF16, DType::kBF16, DType::kBF16}, {DType::kBF16, DType::kF16}};
  const int64_t n_outs[] = {83, 21, 16, 40};
  ThreadPool pool(2);
  uint32_t seed = 40;
  for (const auto& types : sets) {
    std::vector<std::vector<uint8_t>> data;
    std::vector<WeightMatrix> ws;
    for (size_t i = 0; i < types.size(); ++i) {
      data.push_back(quantize(types[i], normal(n_in * n_outs[i], seed++, 0.5f), n_in, n_outs[i]));
      ws.push_back(WeightMatrix::packed(types[i], data.back().data(), n_in, n_outs[i]));
    }
    for (int64_t n_rows : {1, 37}) {
      const auto x = normal(n_in * n_rows, seed++);
      std::vector<std::vector<float>> got(ws.size()), want(ws.size());
      const WeightMatrix* wp[kMaxSharedInput];
      float* yp[kMaxSharedInput];
      for (size_t i = 0; i < ws.size(); ++i) {
        got[i].assign(n_rows * n_outs[i], -1.0f);
        want[i].resize(n_rows * n_outs[i]);
        matmul(ws[i], x.data(), n_rows, want[i].data(), &pool);
        wp[i] = &ws[i];
        yp[i] = got[i].data();
      }
      matmul_shared_input(wp, x.data(), n_rows, yp, static_cast<int>(ws.size()), &pool);
      for (size_t i = 0; i < ws.size(); ++i) {
        expect_bitwise(got[i].data(), want[i].data(), n_rows * n_outs[i],
                       std::string(tensor::dtype_name(types[i])) + " matrix " + std::to_string(i) + ", " +
                           std::to_string(n_rows) + " rows");
      }
    }
  }
}

TEST(MatmulSharedInput, RejectsMatricesOfDifferentWidths) {
  const auto a = quantize(DType::kQ4_0, normal(64 * 16, 50), 64, 16);
  const auto b = quantize(DType::kQ4_0, normal(96 * 16, 51), 96, 16);
  const auto wa = WeightMatrix::packed(DType::kQ4_0, a.data(), 64, 16);
  const auto wb = WeightMatrix::packed(DType::kQ4_0, b.data(), 96, 16);
  const WeightMatrix* ws[] = {&wa, &wb};
  std::vector<float> x(96), ya(16), yb(16);
  float* ys[] = {ya.data(), yb.data()};
  EXPECT_THROW(matmul_shared_input(ws, x.data(), 1, ys, 2, nullptr), Error);
}

TEST_P(IntegerPath, ViewsOfDifferentDataSharingACacheStayDistinct) {
  const auto [type, n_in] = GetParam();
  const int64_t n_out = 17;
  // Two "experts" back to back, the second a copy of the first view moved by a stride.
  const auto data = quantize(type, normal(n_in * n_out * 2, 21, 0.5f), n_in, 2 * n_out);
  const auto first = WeightMatrix::packed(type, data.data(), n_in, n_out);
  WeightMatrix second = first;
  second.data += first.row_stride * n_out;
  const auto fresh = WeightMatrix::packed(type, second.data, n_in, n_out);
  const auto x = normal(n_in, 22);
  std::vector<float> y1(n_out), y2(n_out), yf(n_out);
  matmul(first, x.data(), 1, y1.data(), nullptr);
  matmul(second, x.data(), 1, y2.data(), nullptr);
  matmul(fresh, x.data(), 1, yf.data(), nullptr);
  expect_bitwise(y2.data(), yf.data(), n_out, "moved view");
  EXPECT_NE(std::memcmp(y1.data(), y2.data(), 4 * n_out), 0);
}

TEST_P(IntegerPath, ReferencePathIsTheF32Oracle) {
  const auto [type, n_in] = GetParam();
  const int64_t n_out = 5;
  const auto data = quantize(type, normal(n_in * n_out, 31, 0.5f), n_in, n_out);
  const auto w = WeightMatrix::packed(type, data.data(), n_in, n_out);
  const auto x = normal(n_in, 32);
  std::vector<float> y(n_out), deq(n_in);
  ScopedMatmulPath path(MatmulPath::kReference);
  matmul(w, x.data(), 1, y.data(), nullptr);
  for (int64_t o = 0; o < n_out; ++o) {
    weight_row(w, o, deq.data());
    double s = 0;
    for (int64_t i = 0; i < n_in; ++i) s += double(deq[i]) * x[i];
    EXPECT_NEAR(y[o], s, 1e-4 * (1 + std::fabs(s)));
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, IntegerPath,
                         ::testing::Values(Case{DType::kQ8_0, 96}, Case{DType::kQ8_0, 32 * 7},
                                           Case{DType::kQ4_0, 96}, Case{DType::kQ4_0, 32 * 9},
                                           Case{DType::kQ4_K, 256}, Case{DType::kQ4_K, 256 * 3},
                                           Case{DType::kQ5_K, 256}, Case{DType::kQ5_K, 256 * 3},
                                           Case{DType::kQ6_K, 256}, Case{DType::kQ6_K, 256 * 3}),
                         [](const auto& info) {
                           return std::string(tensor::dtype_name(info.param.type)) + "_" +
                                  std::to_string(info.param.n_in);
                         });

TEST(QuantizeActivations, BlocksRoundHalfToEvenAndSumsMatch) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = float(i - 128) * 0.25f;
  q::ActBuffer buf;
  const q::ActRows a = buf.quantize(x.data(), 1, 256, q::ActFormat::kQ8x256);
  EXPECT_FLOAT_EQ(a.d[0], 32.0f / 127.0f);
  int s16 = 0, s32 = 0;
  for (int i = 0; i < 256; ++i) {
    EXPECT_LE(std::abs(a.qs[i]), 127);
    EXPECT_LE(std::fabs(a.qs[i] * a.d[0] - x[i]), a.d[0] * 0.5f + 1e-6f) << i;
    s16 += a.qs[i];
    s32 += a.qs[i];
    if (i % 16 == 15) {
      EXPECT_EQ(a.sum16[i / 16], s16);
      s16 = 0;
    }
    if (i % 32 == 31) {
      EXPECT_EQ(a.sum32[i / 32], s32);
      s32 = 0;
    }
  }
  // Exactly representable halves go to even: 2.5 -> 2, 3.5 -> 4.
  std::vector<float> h(32, 0.0f);
  h[0] = 127.0f;
  h[1] = 2.5f;
  h[2] = 3.5f;
  h[3] = -2.5f;
  const q::ActRows b = buf.quantize(h.data(), 1, 32, q::ActFormat::kQ8x32);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], 4);
  EXPECT_EQ(b.qs[3], -2);
}

TEST(QuantizeActivations, RejectsBadLengthsAndPropagatesNonFinite) {
  q::ActBuffer buf;
  std::vector<float> x(64, 1.0f);
  EXPECT_THROW(buf.quantize(x.data(), 1, 48, q::ActFormat::kQ8x32), Error);
  EXPECT_THROW(buf.quantize(x.data(), 1, 64, q::ActFormat::kQ8x256), Error);
  x[3] = NAN;
  const q::ActRows a = buf.quantize(x.data(), 1, 64, q::ActFormat::kQ8x32);
  EXPECT_TRUE(std::isnan(a.d[0]));
  EXPECT_EQ(a.d[1], 1.0f / 127.0f);
  // Through matmul: the affected output is non-finite, never a plausible number.
  std::vector<float> wf(64, 0.5f);
  const auto data = quantize(DType::kQ8_0, wf, 64, 1);
  const auto w = WeightMatrix::packed(DType::kQ8_0, data.data(), 64, 1);
  float y = 0;
  matmul(w, x.data(), 1, &y, nullptr);
  EXPECT_FALSE(std::isfinite(y));
}

TEST(Repack, RejectsTypesWithoutAnIntegerLayout) {
  std::vector<uint8_t> data(tensor::row_bytes(DType::kQ5_0, 32) * 2);
  const auto w = WeightMatrix::packed(DType::kQ5_0, data.data(), 32, 2);
  EXPECT_EQ(w.pack, nullptr);
  EXPECT_THROW(q::PackedMatrix{w}, Error);
}

// Packing into an arena gives the bytes of a standalone pack; a full arena hands out no
// more and the matrix gets a buffer of its own instead; the arena lives as long as a
// matrix in it.
TEST(Repack, ArenaSlicesHoldTheSameBytesAndFallBackWhenFull) {
  for (DType type : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(tensor::dtype_name(type));
    const int64_t n_in = 512, n_out = 37;  // a partial last panel
    const auto data = quantize(type, normal(n_in * n_out, 31), n_in, n_out);
    const auto w = WeightMatrix::packed(type, data.data(), n_in, n_out);
    const q::PackedMatrix alone(w);
    ASSERT_EQ(q::PackedMatrix::bytes_for(w), alone.bytes());

    auto arena = std::make_shared<q::PackArena>(alone.bytes() + 100);  // room for one
    auto first = std::make_unique<q::PackedMatrix>(w, nullptr, arena);
    const q::PackedMatrix second(w, nullptr, arena);  // no room: its own buffer
    arena.reset();  // `first` keeps it alive
    for (const q::PackedMatrix* pm : {static_cast<const q::PackedMatrix*>(first.get()), &second}) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(pm->panel(0)) % 64, 0u);
      EXPECT_EQ(std::memcmp(pm->panel(0), alone.panel(0), alone.bytes()), 0);
    }
    EXPECT_NE(first->panel(0), second.panel(0));
  }
}

TEST(Repack, ArenaTakesAlignedDisjointSlicesUntilFull) {
  q::PackArena arena(1024);
  uint8_t* a = arena.take(100);
  uint8_t* b = arena.take(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b - a, 128);  // 100 rounded up to whole cache lines
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  EXPECT_EQ(arena.take(2000), nullptr);
  EXPECT_NE(arena.take(1024 - 192), nullptr);  // exactly what is left
  EXPECT_EQ(arena.take(1), nullptr);
  EXPECT_EQ(arena.take(SIZE_MAX), nullptr);  // no overflow in the rounding
}

// The tiles of a panel call share the next panels' lines exactly: contiguous, disjoint,
// covering every byte (also from a misaligned start), and each tile's blocks ask for its
// whole share, in order, once.
TEST(PrefetchPacer, TilesShareTheRangeExactlyAndBlocksCoverTheirShare) {
  alignas(64) static uint8_t buf[64 * 300];
  for (size_t offset : {size_t{0}, size_t{5}, size_t{63}}) {
    for (size_t bytes : {size_t{1}, size_t{64}, size_t{1000}, size_t{64 * 200 + 7}}) {
      for (int n_tiles : {1, 2, 3, 5}) {
        for (int64_t n_blocks : {int64_t{1}, int64_t{7}, int64_t{64}}) {
          const q::NextPanels next{buf + offset, bytes};
          const char* expect = reinterpret_cast<const char*>(buf);
          int64_t total = 0;
          for (int t = 0; t < n_tiles; ++t) {
            const q::PrefetchPacer pacer(next, t, n_tiles, n_blocks);
            if (pacer.lines() > 0) {
              EXPECT_EQ(pacer.first(), expect) << "tile " << t << " starts where the last one ended";
            }
            expect += 64 * pacer.lines();
            total += pacer.lines();
            EXPECT_EQ(pacer.first_line(0), 0);
            EXPECT_EQ(pacer.first_line(n_blocks), pacer.lines()) << "the blocks ask for the whole share";
            for (int64_t b = 0; b < n_blocks; ++b) EXPECT_LE(pacer.first_line(b), pacer.first_line(b + 1));
          }
          EXPECT_EQ(total, static_cast<int64_t>((offset + bytes + 63) / 64)) << "offset " << offset << " bytes " << bytes;
        }
      }
    }
  }
  const q::PrefetchPacer none(q::NextPanels{}, 0, 2, 8);
  EXPECT_EQ(none.lines(), 0);
}

}  // namespace
}  // namespace keel::kernels
