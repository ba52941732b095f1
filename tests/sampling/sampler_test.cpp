#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "sampling/rng.h"
#include "sampling/sampler.h"

namespace keel::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> out;
  for (double v : p) out.push_back(static_cast<float>(std::log(v)));
  return out;
}

// A pseudo-random logits row of any size (its own generator, independent of the sampler's).
std::vector<float> random_row(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> row(n);
  for (float& v : row) v = static_cast<float>(rng.uniform() * 20.0 - 10.0);
  return row;
}

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTiesAndIgnoresSeed) {
  SamplingParams p = greedy();
  for (uint64_t seed : {0ULL, 1ULL, 999ULL}) {
    p.seed = seed;
    Sampler s(p);
    EXPECT_EQ(s.sample(std::vector<float>{0.5f, 2.0f, -1.0f, 2.0f}).token, 1);
    EXPECT_EQ(s.sample(std::vector<float>{-kInf, -3.0f, -kInf}).token, 1);
  }
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  SamplingParams p;
  p.top_k = 1;
  p.temperature = 5.0f;
  Sampler s(p);
  const std::vector<float> row = random_row(1001, 3);
  Sampler g(greedy());
  const int32_t best = g.sample(row).token;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(row).token, best);
}

TEST(Sampler, HugePositiveBiasForcesTheTokenHugeNegativeBansIt) {
  SamplingParams p;
  p.logit_bias = {{3, 1e30f}};
  Sampler s(p);
  const std::vector<float> row = random_row(64, 5);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(row).token, 3);

  SamplingParams ban = greedy();
  ban.logit_bias = {{0, -kInf}};
  Sampler b(ban);
  EXPECT_EQ(b.sample(std::vector<float>{9.0f, 1.0f, 2.0f}).token, 2);
}

TEST(Sampler, AllMaskedAfterBiasIsAClearErrorAndTheSamplerStaysUsable) {
  SamplingParams p;
  p.logit_bias = {{0, -kInf}, {1, -kInf}};
  p.seed = 11;
  Sampler s(p);
  try {
    s.sample(std::vector<float>{1.0f, 2.0f});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("masked"), std::string::npos) << e.what();
  }
  // The failed call drew nothing: the next draw equals a fresh sampler's first.
  Sampler fresh(p);
  const std::vector<float> row{1.0f, 2.0f, 3.0f, 0.0f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(row).token, fresh.sample(row).token);
}

TEST(Sampler, NonFiniteModelOutputIsAnErrorNotACrash) {
  Sampler s(SamplingParams{});
  EXPECT_THROW(s.sample(std::vector<float>{1.0f, std::nanf(""), 0.0f}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{1.0f, kInf}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{}), Error);
  SamplingParams bias;
  bias.logit_bias = {{5, 1.0f}};
  Sampler b(bias);
  EXPECT_THROW(b.sample(std::vector<float>{1.0f, 2.0f}), Error);  // id 5 outside n_vocab 2
}

TEST(Sampler, RepetitionPenaltyActsOnTheWindowOnly) {
  SamplingParams p = greedy();
  p.repeat_penalty = 4.0f;
  p.penalty_last_n = 2;
  Sampler s(p);
  const std::vector<float> row{3.0f, 2.0f, 1.0f};
  EXPECT_EQ(s.sample(row).token, 0);
  s.accept(0);  // 3 / 4 = 0.75 < 1
  EXPECT_EQ(s.sample(row).token, 1);
  s.accept(1);  // 2 / 4 = 0.5; token 0 still in the window
  EXPECT_EQ(s.sample(row).token, 2);
  s.accept(2);  // window is now {1, 2}: token 0 is free again
  EXPECT_EQ(s.sample(row).token, 0);
  s.reset();
  EXPECT_EQ(s.sample(row).token, 0);
}

TEST(Sampler, PenaltyWindowZeroDisablesPenaltiesMinusOneKeepsEverything) {
  SamplingParams off = greedy();
  off.repeat_penalty = 100.0f;
  off.penalty_last_n = 0;
  Sampler s(off);
  s.accept(std::vector<int32_t>{0, 0, 0});
  EXPECT_EQ(s.sample(std::vector<float>{3.0f, 2.0f}).token, 0);

  SamplingParams all = greedy();
  all.frequency_penalty = 1.0f;
  all.penalty_last_n = -1;
  Sampler a(all);
  a.accept(0);
  for (int i = 0; i < 500; ++i) a.accept(1);
  // 1.5 - 1 (one occurrence, long ago) = 0.5 beats 3 - 500.
  EXPECT_EQ(a.sample(std::vector<float>{1.5f, 3.0f}).token, 0);
}

TEST(Sampler, PresenceAndFrequencyPenaltiesSubtract) {
  SamplingParams p = greedy();
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.3f;
  p.top_logprobs = 2;
  Sampler s(p);
  s.accept(std::vector<int32_t>{0, 0});
  // token 0: 2.0 - 0.5 - 2 * 0.3 = 0.9 < 1.0
  const SampleResult r = s.sample(std::vector<float>{2.0f, 1.0f});
  EXPECT_EQ(r.token, 1);
  const double lse = std::log(std::exp(0.9) + std::exp(1.0));
  EXPECT_NEAR(r.logprob, 1.0 - lse, 1e-6);
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_NEAR(r.top[1].logprob, 0.9 - lse, 1e-6);
}

TEST(Sampler, LogprobsAreOfTheBiasedUntruncatedUntemperedDistribution) {
  const std::vector<float> row{2.0f, 1.0f, 0.0f, -kInf, 1.0f};
  const double lse = std::log(std::exp(2.5) + std::exp(1.0) + std::exp(0.0) + std::exp(1.0));
  for (float temperature : {0.0f, 0.7f, 3.0f}) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 1;  // truncation does not change the reported numbers
    p.logit_bias = {{0, 0.5f}};
    p.top_logprobs = 10;  // more than the unmasked tokens
    Sampler s(p);
    const SampleResult r = s.sample(row);
    EXPECT_EQ(r.token, 0);
    EXPECT_NEAR(r.logprob, 2.5 - lse, 1e-6);
    ASSERT_EQ(r.top.size(), 4u);  // the masked token is never listed
    EXPECT_EQ(r.top[0].token, 0);
    EXPECT_EQ(r.top[1].token, 1);  // tie with 4: lowest id first
    EXPECT_EQ(r.top[2].token, 4);
    EXPECT_EQ(r.top[3].token, 2);
    EXPECT_NEAR(r.top[3].logprob, 0.0 - lse, 1e-6);
  }
  Sampler none(greedy());
  EXPECT_TRUE(none.sample(row).top.empty());
}

TEST(Sampler, LogprobsOnlyWhenAskedFor) {
  const std::vector<float> row{1.0f, 2.0f};
  SamplingParams p = greedy();
  Sampler plain(p);
  EXPECT_EQ(plain.sample(row).logprob, 0.0f);
  p.logprobs = true;
  Sampler asked(p);
  const SampleResult r = asked.sample(row);
  EXPECT_NEAR(r.logprob, 2.0 - std::log(std::exp(1.0) + std::exp(2.0)), 1e-6);
  EXPECT_TRUE(r.top.empty());
}

TEST(Sampler, GreedyShortcutPicksWhatTheFullChainPicks) {
  // Without logprobs, temperature 0 takes an argmax shortcut; with them, the full chain
  // runs. Rows with many ties exercise the lowest-id rule through every truncation.
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<float> row = random_row(997, 500 + trial);
    for (float& v : row) v = std::round(v);  // many equal maxima
    SamplingParams p = greedy();
    p.top_k = trial % 3 == 0 ? 0 : 5;
    p.top_p = trial % 2 == 0 ? 1.0f : 0.3f;
    p.min_p = trial % 5 == 0 ? 0.0f : 0.5f;
    p.logit_bias = {{trial, -kInf}};
    Sampler fast(p);
    p.logprobs = true;
    Sampler full(p);
    EXPECT_EQ(fast.sample(row).token, full.sample(row).token) << trial;
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  p.typical_p = 0.98f;
  p.repeat_penalty = 1.1f;
  p.seed = 424242;
  const auto run = [](const SamplingParams& params) {
    Sampler s(params);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) {
      const int32_t t = s.sample(random_row(257, 100 + i)).token;
      s.accept(t);
      out.push_back(t);
    }
    return out;
  };
  const std::vector<int32_t> a = run(p);
  EXPECT_EQ(a, run(p));
  p.seed = 424243;
  EXPECT_NE(a, run(p));
}

TEST(Sampler, DrawsFollowTheDocumentedRngStream) {
  // Token i is chosen iff the RNG's uniform() falls in its CDF bucket: recompute the
  // choice independently from Rng(seed) and exact probabilities, away from boundaries.
  const std::vector<double> probs{0.4, 0.3, 0.2, 0.1};
  SamplingParams p;
  p.seed = 2026;
  Sampler s(p);
  Rng rng(2026);
  for (int i = 0; i < 200; ++i) {
    const double u = rng.uniform();
    int32_t expected = 0;
    double cum = probs[0];
    while (u >= cum && expected < 3) cum += probs[++expected];
    EXPECT_EQ(s.sample(log_probs(probs)).token, expected) << "draw " << i << " u=" << u;
  }
}

// Frequencies of n draws against expected probabilities: deterministic with a fixed
// seed; the bound (5 standard deviations) only guards against a wrong distribution.
void expect_frequencies(const SamplingParams& params, const std::vector<float>& row,
                        const std::vector<double>& expected) {
  Sampler s(params);
  const int n = 40000;
  std::vector<int> counts(row.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[s.sample(row).token];
  for (size_t t = 0; t < row.size(); ++t) {
    const double f = static_cast<double>(counts[t]) / n;
    const double sigma = std::sqrt(expected[t] * (1 - expected[t]) / n);
    EXPECT_NEAR(f, expected[t], 5 * sigma + 1e-12) << "token " << t;
  }
}

TEST(Sampler, FrequenciesMatchTheDistributionAfterEachStage) {
  const std::vector<float> row = log_probs({0.4, 0.3, 0.2, 0.1});
  SamplingParams p;
  p.seed = 77;
  expect_frequencies(p, row, {0.4, 0.3, 0.2, 0.1});
  p.temperature = 0.5f;  // p^2, renormalised
  expect_frequencies(p, row, {0.16 / 0.30, 0.09 / 0.30, 0.04 / 0.30, 0.01 / 0.30});
  p.temperature = 1.0f;
  p.top_k = 2;
  expect_frequencies(p, row, {0.4 / 0.7, 0.3 / 0.7, 0.0, 0.0});
  p.top_k = 0;
  p.top_p = 0.85f;  // 0.4 + 0.3 + 0.2 = 0.9 >= 0.85
  expect_frequencies(p, row, {0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0.0});
  p.top_p = 1.0f;
  p.min_p = 0.6f;  // keep p >= 0.24
  expect_frequencies(p, row, {0.4 / 0.7, 0.3 / 0.7, 0.0, 0.0});
}

TEST(Sampler, LargeVocabularyOddSizeWorksWithEveryStage) {
  SamplingParams p;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.typical_p = 0.95f;
  p.top_logprobs = 5;
  p.seed = 1;
  Sampler s(p);
  const std::vector<float> row = random_row(151937, 9);
  for (int i = 0; i < 3; ++i) {
    const SampleResult r = s.sample(row);
    ASSERT_GE(r.token, 0);
    ASSERT_LT(r.token, 151937);
    ASSERT_EQ(r.top.size(), 5u);
    EXPECT_LE(r.logprob, r.top[0].logprob);
    for (size_t k = 1; k < r.top.size(); ++k) EXPECT_GE(r.top[k - 1].logprob, r.top[k].logprob);
  }
}

}  // namespace
}  // namespace keel::sampling
