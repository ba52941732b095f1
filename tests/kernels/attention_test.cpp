#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/attention_fixture.h"
#include "kernels/quantize_act.h"
#include "tensor/types.h"

namespace keel::kernels {
namespace {

using attn_test::FakeLayer;
using tensor::DType;

// Straightforward double-precision attention for one query row.
std::vector<double> reference(const FakeLayer& f, const float* q, int64_t pos, int64_t n_head,
                              const AttentionParams& p) {
  const int64_t group = n_head / f.n_kv;
  std::vector<double> out(n_head * f.dv, 0.0);
  int64_t lo = std::max<int64_t>(0, f.view.first_held);
  if (f.view.window > 0) lo = std::max(lo, pos - f.view.window + 1);
  const int64_t hi = std::min(pos, f.n_pos - 1);
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t kvh = h / group;
    std::vector<double> s;
    for (int64_t kp = lo; kp <= hi; ++kp) {
      double d = 0;
      for (int64_t i = 0; i < f.dk; ++i) d += double(q[h * f.dk + i]) * f.k[(kp * f.n_kv + kvh) * f.dk + i];
      d *= p.scale;
      if (p.softcap > 0) d = p.softcap * std::tanh(d / p.softcap);
      s.push_back(d);
    }
    double m = -std::numeric_limits<double>::infinity();
    for (double x : s) m = std::max(m, x);
    if (p.sinks) m = std::max(m, double(p.sinks[h]));
    double den = 0;
    for (double& x : s) den += (x = std::exp(x - m));
    if (p.sinks) den += std::exp(p.sinks[h] - m);
    for (size_t j = 0; j < s.size(); ++j)
      for (int64_t i = 0; i < f.dv; ++i)
        out[h * f.dv + i] += s[j] / den * f.v[((lo + j) * f.n_kv + kvh) * f.dv + i];
  }
  return out;
}

struct Case {
  tensor::DType kt, vt;
  int64_t n_head, n_kv, dk, dv;
  int32_t window;
  float softcap;
  bool sinks;
};

class AttentionCases : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionCases, PlainAndFlashMatchReferenceAndAreBatchInvariant) {
  const Case c = GetParam();
  if (!tensor::traits(c.kt).has_quantize || !tensor::traits(c.vt).has_quantize)
    GTEST_SKIP() << "KV type conversions not built yet";
  const int64_t n_pos = 29;  // odd, crosses pages
  // Pages of 2 make flash segments (8 pages) shorter than the sequence: their fold is checked.
  for (int32_t pt : {8, 2}) {
    FakeLayer f(n_pos, c.n_kv, c.dk, c.dv, pt, c.kt, c.vt, 7);
    f.view.window = c.window;
    if (c.window > 0) f.drop_below(n_pos - 1 - c.window + 1 - 3);  // keep a bit more than needed
    std::vector<float> sinks(c.n_head);
    for (int64_t h = 0; h < c.n_head; ++h) sinks[h] = 0.5f * h - 0.3f;

    // Queries at every position the view can serve.
    const int64_t first_q = c.window > 0 ? f.view.first_held + c.window - 1 : 0;
    std::vector<int64_t> pos;
    for (int64_t p = first_q; p < n_pos; ++p) pos.push_back(p);
    const int64_t n_q = pos.size();
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> q(n_q * c.n_head * c.dk);
    for (auto& x : q) x = d(rng);
    std::vector<const kv::KvLayerView*> views(n_q, &f.view);

    ThreadPool pool(3);
    for (bool flash : {false, true}) {
      AttentionParams p;
      p.n_head = c.n_head;
      p.scale = 1.0f / std::sqrt(float(c.dk));
      p.softcap = c.softcap;
      p.sinks = c.sinks ? sinks.data() : nullptr;
      p.flash = flash;
      const int64_t os = c.n_head * c.dv;
      std::vector<float> out(n_q * os), one(os), out1(n_q * os);
      attention(q.data(), pos.data(), views.data(), n_q, p, out.data(), &pool);
      attention(q.data(), pos.data(), views.data(), n_q, p, out1.data(), nullptr);
      EXPECT_EQ(std::memcmp(out.data(), out1.data(), 4 * out.size()), 0) << "thread count matters";
      // Flash on q8_0 K scores with the query rounded to 8 bits per block of 32
      // (attention_flash.h, step 1): the reference gets that query.
      std::vector<float> q_ref = q;
      if (flash && c.kt == DType::kQ8_0) {
        int8_t codes[32];
        for (size_t b = 0; b < q_ref.size(); b += 32) {
          const float qd = q::quantize_block_q8_scalar(&q[b], 32, codes);
          for (int i = 0; i < 32; ++i) q_ref[b + i] = qd * codes[i];
        }
      }
      for (int64_t r = 0; r < n_q; ++r) {
        auto ref = reference(f, &q_ref[r * c.n_head * c.dk], pos[r], c.n_head, p);
        for (int64_t i = 0; i < os; ++i)
          ASSERT_NEAR(out[r * os + i], ref[i], 2e-4)
              << "flash=" << flash << " page " << pt << " row " << r << " i " << i;
        attention(&q[r * c.n_head * c.dk], &pos[r], views.data(), 1, p, one.data(), &pool);
        EXPECT_EQ(std::memcmp(one.data(), &out[r * os], 4 * os), 0)
            << "flash=" << flash << " row " << r << ": batch of 1 differs from batch of " << n_q;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, AttentionCases,
    ::testing::Values(Case{DType::kF32, DType::kF32, 4, 2, 16, 16, 0, 0.0f, false},
                      Case{DType::kF16, DType::kF16, 4, 4, 8, 8, 0, 0.0f, false},
                      Case{DType::kF32, DType::kF32, 6, 1, 12, 20, 0, 5.0f, false},  // MQA
                      Case{DType::kF32, DType::kF16, 4, 2, 16, 16, 5, 0.0f, true},   // window+sinks
                      Case{DType::kBF16, DType::kF32, 4, 2, 16, 16, 9, 3.0f, true},
                      Case{DType::kQ8_0, DType::kQ8_0, 4, 2, 32, 32, 0, 0.0f, false},
                      Case{DType::kQ8_0, DType::kQ4_0, 4, 2, 32, 32, 6, 0.0f, true},
                      Case{DType::kQ4_1, DType::kQ5_0, 2, 2, 32, 64, 0, 0.0f, false},
                      Case{DType::kQ5_1, DType::kF16, 2, 1, 32, 32, 0, 0.0f, true}));

// q8_0 V in pair tiles sums p·v in integers with weights kept to 15 bits of the tile's
// largest V scale (attention_flash.h, step 5): at depth, flash stays close to the plain
// path, which sums the same V values in f32.
TEST(Attention, PairTileValuesStayCloseToTheFloatSumAtDepth) {
  FakeLayer f(1500, 2, 64, 64, 32, DType::kF16, DType::kQ8_0, 21);
  ASSERT_TRUE(f.view.v_pairs);
  const int64_t n_head = 8;
  std::vector<int64_t> pos = {0, 31, 700, 1499};
  std::mt19937 rng(8);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> q(pos.size() * n_head * 64);
  for (auto& x : q) x = d(rng);
  std::vector<const kv::KvLayerView*> views(pos.size(), &f.view);
  AttentionParams p;
  p.n_head = n_head;
  p.scale = 1.0f / 8.0f;
  std::vector<float> plain(pos.size() * n_head * 64), flash(plain.size());
  ThreadPool pool(2);
  attention(q.data(), pos.data(), views.data(), static_cast<int64_t>(pos.size()), p, plain.data(), &pool);
  p.flash = true;
  attention(q.data(), pos.data(), views.data(), static_cast<int64_t>(pos.size()), p, flash.data(), &pool);
  for (size_t i = 0; i < plain.size(); ++i) ASSERT_NEAR(flash[i], plain[i], 2e-4) << "element " << i;
}

TEST(Attention, FullyMaskedRowGivesZerosAndCounts) {
  FakeLayer f(16, 1, 8, 8, 4, DType::kF32, DType::kF32, 1);
  f.view.window = 4;
  f.drop_below(12);  // keys below 12 are gone: a query at 5 sees nothing
  const int64_t pos[2] = {5, 14};
  std::vector<float> q(2 * 8, 1.0f), out(2 * 8, 123.0f);
  const kv::KvLayerView* views[2] = {&f.view, &f.view};
  for (bool flash : {false, true}) {
    AttentionParams p;
    p.n_head = 1;
    p.flash = flash;
    const uint64_t before = empty_attention_rows();
    attention(q.data(), pos, views, 2, p, out.data(), nullptr);
    EXPECT_EQ(empty_attention_rows(), before + 1);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 0.0f);
    EXPECT_NE(out[8], 0.0f);
  }
  // Keys in range but pages not held (a broken cache) also yield zeros, not garbage.
  f.view.k_pages[3] = nullptr;
  f.view.v_pages[3] = nullptr;
  AttentionParams p;
  p.n_head = 1;
  const uint64_t before = empty_attention_rows();
  attention(q.data() + 8, pos + 1, views, 1, p, out.data(), nullptr);
  EXPECT_EQ(empty_attention_rows(), before + 1);
  EXPECT_EQ(out[0], 0.0f);
}

TEST(Attention, RejectsHeadMismatch) {
  FakeLayer f(4, 3, 8, 8, 4, DType::kF32, DType::kF32, 1);
  const int64_t pos = 3;
  std::vector<float> q(4 * 8), out(4 * 8);
  const kv::KvLayerView* views[1] = {&f.view};
  AttentionParams p;
  p.n_head = 4;  // not a multiple of 3
  EXPECT_THROW(attention(q.data(), &pos, views, 1, p, out.data(), nullptr), Error);
}

}  // namespace
}  // namespace keel::kernels
