// KV quality on the qwen3 reference model (head_dim 32, so q8_0/q4_0 KV apply): the
// baseline against itself is exact, quantized caches drift in order of their precision,
// and the result does not depend on the thread count.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "engine/kv_quality.h"
#include "model/model.h"
#include "support/paths.h"

namespace keel::engine {
namespace {

using tensor::DType;

std::vector<int32_t> prompt() {
  std::vector<int32_t> ids = {1};
  for (int i = 0; i < 40; ++i) ids.push_back(3 + (i * 37) % 500);
  return ids;
}

TEST(KvQuality, KlOfRows) {
  const std::vector<float> a = {1.0f, 2.0f, 3.0f}, b = {3.0f, 2.0f, 1.0f};
  EXPECT_EQ(kl_divergence_logits(a, a), 0.0);
  // Two classes, p = softmax(0, ln 3) = (1/4, 3/4) vs q = (1/2, 1/2).
  const std::vector<float> p = {0.0f, std::log(3.0f)}, q = {5.0f, 5.0f};
  const double expected = 0.25 * std::log(0.5) + 0.75 * std::log(1.5);
  EXPECT_NEAR(kl_divergence_logits(p, q), expected, 1e-6);
  EXPECT_GT(kl_divergence_logits(a, b), 0.0);
  EXPECT_THROW(kl_divergence_logits(a, p), Error);
}

TEST(KvQuality, QuantizedCachesAgainstF32) {
  const model::Model m(test::reference_path("qwen3", "model.gguf"));
  const std::vector<KvTypePair> pairs = {
      {DType::kF32, DType::kF32}, {DType::kF16, DType::kF16}, {DType::kQ8_0, DType::kQ8_0}, {DType::kQ4_0, DType::kQ4_0}};
  KvQualityOptions o;
  o.n_generate = 12;
  o.threads = 2;
  const auto p = prompt();
  const KvQualityReport rep = measure_kv_quality(m, p, pairs, o);
  ASSERT_EQ(rep.results.size(), 4u);
  EXPECT_EQ(rep.prompt_tokens, static_cast<int64_t>(p.size()));
  EXPECT_EQ(rep.baseline_tokens.size(), 12u);
  const KvQualityResult& same = rep.results[0];
  EXPECT_EQ(same.mean_kl, 0.0);
  EXPECT_EQ(same.top1_agreement, 1.0);
  EXPECT_EQ(same.first_divergence, -1);
  EXPECT_FALSE(same.degraded);
  for (const KvQualityResult& r : rep.results) {
    EXPECT_EQ(r.positions, 12);
    EXPECT_GE(r.max_kl, r.mean_kl);
    if (r.first_divergence >= 0) {
      EXPECT_LT(r.top1_agreement, 1.0);
    }
  }
  // Precision order: f16 drifts less than q8_0, which drifts less than q4_0.
  EXPECT_GT(rep.results[1].mean_kl, 0.0);
  EXPECT_LT(rep.results[1].mean_kl, rep.results[2].mean_kl);
  EXPECT_LT(rep.results[2].mean_kl, rep.results[3].mean_kl);
  EXPECT_NE(describe(rep.results[3], rep.baseline).find("q4_0/q4_0 vs f32/f32"), std::string::npos);

  o.threads = 1;  // batch-invariant kernels: same figures on one thread
  const KvQualityReport one = measure_kv_quality(m, p, std::span(pairs).subspan(3), o);
  EXPECT_EQ(one.baseline_tokens, rep.baseline_tokens);
  EXPECT_EQ(one.results[0].mean_kl, rep.results[3].mean_kl);
}

TEST(KvQuality, ThresholdsMarkDegradation) {
  const model::Model m(test::reference_path("qwen3", "model.gguf"));
  KvQualityOptions o;
  o.n_generate = 4;
  o.max_mean_kl = -1;  // any drift at all is "degraded"
  const KvTypePair q4{DType::kQ4_0, DType::kQ4_0};
  const auto p = prompt();
  EXPECT_TRUE(measure_kv_quality(m, p, std::span(&q4, 1), o).results[0].degraded);
  o.max_mean_kl = 1e9;
  o.min_top1 = 0;
  EXPECT_FALSE(measure_kv_quality(m, p, std::span(&q4, 1), o).results[0].degraded);
}

TEST(KvQuality, BadInputThrows) {
  const model::Model m(test::reference_path("qwen3", "model.gguf"));
  const KvTypePair q8{DType::kQ8_0, DType::kQ8_0};
  KvQualityOptions o;
  EXPECT_THROW(measure_kv_quality(m, {}, std::span(&q8, 1), o), Error);
  const std::vector<int32_t> out_of_vocab = {1, 100000};
  EXPECT_THROW(measure_kv_quality(m, out_of_vocab, std::span(&q8, 1), o), Error);
  o.n_generate = 0;
  EXPECT_THROW(measure_kv_quality(m, prompt(), std::span(&q8, 1), o), Error);
}

}  // namespace
}  // namespace keel::engine
