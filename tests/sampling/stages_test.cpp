#include <cfloat>
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "sampling/stages.h"

namespace keel::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

CandidateSet make_set(const std::vector<float>& logits) {
  CandidateSet set;
  collect_candidates(logits, &set);
  return set;
}

std::vector<int32_t> ids(const CandidateSet& set) {
  std::vector<int32_t> out;
  for (const Candidate& c : set.items) out.push_back(c.id);
  return out;
}

// Logits whose softmax is exactly-ish {0.5, 0.3, 0.15, 0.05}.
std::vector<float> four_way() {
  return {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
}

std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no keel::Error thrown";
  return "";
}

TEST(CheckLogits, RejectsNaNAndPlusInfNamingTheIndexAllowsMinusInf) {
  EXPECT_NO_THROW(check_logits(std::vector<float>{1.0f, -kInf, -3.0f}));
  const std::vector<float> with_nan{0.0f, 1.0f, kNaN};
  EXPECT_NE(error_message([&] { check_logits(with_nan); }).find("logits[2] is NaN"), std::string::npos);
  const std::vector<float> with_inf{kInf, 1.0f};
  EXPECT_NE(error_message([&] { check_logits(with_inf); }).find("logits[0] is +inf"), std::string::npos);
  EXPECT_THROW(check_logits(std::vector<float>{}), Error);
}

TEST(LogitBias, AddsBansAndClampsOverflow) {
  std::vector<float> logits{1.0f, 2.0f, FLT_MAX, 0.0f};
  apply_logit_bias(logits, {{0, 0.5f}, {1, -kInf}, {2, FLT_MAX}, {3, -1e30f}});
  EXPECT_EQ(logits[0], 1.5f);
  EXPECT_EQ(logits[1], -kInf);
  EXPECT_EQ(logits[2], FLT_MAX);  // overflow clamps; never +inf
  EXPECT_EQ(logits[3], -1e30f);
}

TEST(LogitBias, TokenOutsideVocabularyIsAnError) {
  std::vector<float> logits(10, 0.0f);
  const std::string msg = error_message([&] { apply_logit_bias(logits, {{10, 1.0f}}); });
  EXPECT_NE(msg.find("token 10"), std::string::npos) << msg;
  EXPECT_NE(msg.find("10 tokens"), std::string::npos) << msg;
}

TEST(Penalties, RepetitionDividesPositiveMultipliesNegativeThenPresenceAndFrequency) {
  std::vector<float> logits{2.0f, -2.0f, 1.0f, 0.5f, -kInf};
  apply_penalties(logits, {{0, 2}, {1, 1}, {3, 1}, {4, 3}, {99, 5}},
                  {.repeat_penalty = 2.0f, .presence_penalty = 0.25f, .frequency_penalty = 0.5f});
  EXPECT_FLOAT_EQ(logits[0], 2.0f / 2 - (2 * 0.5f + 0.25f));
  EXPECT_FLOAT_EQ(logits[1], -2.0f * 2 - (1 * 0.5f + 0.25f));
  EXPECT_FLOAT_EQ(logits[2], 1.0f);  // not in the window
  EXPECT_FLOAT_EQ(logits[3], 0.5f / 2 - 0.75f);
  EXPECT_EQ(logits[4], -kInf);       // masked stays masked
}

TEST(Penalties, NeutralOptionsChangeNothingAndTinyPenaltyStaysFinite) {
  std::vector<float> logits{3.0f, -1.0f};
  apply_penalties(logits, {{0, 4}, {1, 1}}, {});
  EXPECT_EQ(logits, (std::vector<float>{3.0f, -1.0f}));
  std::vector<float> big{FLT_MAX};
  apply_penalties(big, {{0, 1}}, {.repeat_penalty = 1e-30f});
  EXPECT_EQ(big[0], FLT_MAX);
  // A negative penalty that overflows must neither unmask a banned token nor make NaN.
  std::vector<float> banned{-kInf, 0.0f};
  apply_penalties(banned, {{0, 3}, {1, 3}}, {.frequency_penalty = -FLT_MAX});
  EXPECT_EQ(banned[0], -kInf);
  EXPECT_EQ(banned[1], FLT_MAX);
}

TEST(Candidates, MaskedTokensAreDroppedAllMaskedIsAClearError) {
  CandidateSet set = make_set({-kInf, 1.0f, -kInf, 0.0f});
  EXPECT_EQ(ids(set), (std::vector<int32_t>{1, 3}));
  std::vector<float> none(7, -kInf);
  const std::string msg = error_message([&] { collect_candidates(none, &set); });
  EXPECT_NE(msg.find("masked"), std::string::npos) << msg;
}

TEST(TopK, ZeroIsOffOneKeepsTheBestLowestIdOnTies) {
  CandidateSet all = make_set({1.0f, 3.0f, 3.0f, 2.0f});
  apply_top_k(&all, 0);
  EXPECT_EQ(all.items.size(), 4u);
  CandidateSet one = make_set({1.0f, 3.0f, 3.0f, 2.0f});
  apply_top_k(&one, 1);
  EXPECT_EQ(ids(one), (std::vector<int32_t>{1}));
  CandidateSet two = make_set({1.0f, 3.0f, 3.0f, 2.0f});
  apply_top_k(&two, 2);
  EXPECT_EQ(ids(two), (std::vector<int32_t>{1, 2}));
  CandidateSet many = make_set({1.0f, 3.0f, 3.0f, 2.0f});
  apply_top_k(&many, 1000);
  EXPECT_EQ(ids(many), (std::vector<int32_t>{1, 2, 3, 0}));
}

TEST(TopP, KeepsSmallestPrefixReachingP) {
  const auto run = [](float p) {
    CandidateSet set = make_set(four_way());
    apply_top_p(&set, p);
    return ids(set);
  };
  EXPECT_EQ(run(1.0f), (std::vector<int32_t>{0, 1, 2, 3}));  // off: nothing removed
  EXPECT_EQ(run(0.45f), (std::vector<int32_t>{0}));
  EXPECT_EQ(run(0.7f), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(run(0.9f), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(run(0.99f), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(run(1e-6f), (std::vector<int32_t>{0}));
}

TEST(TopP, PartialOrderingEqualsAFullSortReference) {
  // Rows of odd sizes, some with many ties (coarse values), against a plain full sort.
  uint64_t state = 99;
  for (int size : {3, 257, 1001, 40000, 100003}) {
    for (float step : {0.0f, 0.5f}) {
      std::vector<float> row(size);
      for (float& v : row) {
        const float x = static_cast<float>(static_cast<double>(state = state * 6364136223846793005ULL + 1442695040888963407ULL) /
                                           18446744073709551616.0 * 16.0 - 8.0);
        v = step > 0 ? std::round(x / step) * step : x;
      }
      for (float p : {0.05f, 0.5f, 0.9f, 0.999f}) {
        CandidateSet set = make_set(row);
        double m = -kInf, total = 0.0;
        for (const Candidate& c : set.items) m = std::max(m, static_cast<double>(c.logit));
        for (const Candidate& c : set.items) total += std::exp(static_cast<double>(c.logit) - m);
        std::vector<Candidate> ref = set.items;
        std::sort(ref.begin(), ref.end(), candidate_before);
        double cum = 0.0;
        size_t keep = ref.size();
        for (size_t i = 0; i < ref.size(); ++i) {
          cum += std::exp(static_cast<double>(ref[i].logit) - m);
          if (cum >= p * total) {
            keep = i + 1;
            break;
          }
        }
        ref.resize(keep);
        apply_top_p(&set, p);
        ASSERT_EQ(set.items.size(), ref.size()) << size << " " << p;
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(set.items[i].id, ref[i].id);
        EXPECT_TRUE(set.sorted);
      }
    }
  }
}

TEST(MinP, KeepsTokensWithinFactorOfTheBest) {
  const auto run = [](float m) {
    CandidateSet set = make_set(four_way());
    apply_min_p(&set, m);
    return ids(set);
  };
  EXPECT_EQ(run(0.0f), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(run(0.2f), (std::vector<int32_t>{0, 1, 2}));   // needs p >= 0.1
  EXPECT_EQ(run(0.5f), (std::vector<int32_t>{0, 1}));      // needs p >= 0.25
  EXPECT_EQ(run(1.0f), (std::vector<int32_t>{0}));
  CandidateSet ties = make_set({2.0f, 1.0f, 2.0f});
  apply_min_p(&ties, 1.0f);
  EXPECT_EQ(ids(ties), (std::vector<int32_t>{0, 2}));
}

TEST(TypicalP, KeepsTokensClosestToTheEntropyFirst) {
  // p = {.5, .3, .15, .05}: entropy 1.142 nats; |surprise - H| = {.449, .062, .755, 1.854},
  // so token 1 (not the most likely) is the most typical.
  const auto run = [](float p) {
    CandidateSet set = make_set(four_way());
    apply_typical_p(&set, p);
    return ids(set);
  };
  EXPECT_EQ(run(1.0f), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(run(0.25f), (std::vector<int32_t>{1}));
  EXPECT_EQ(run(0.7f), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(run(0.9f), (std::vector<int32_t>{0, 1, 2}));
}

TEST(CandidateProbs, SoftmaxSumsToOneAndSurvivesHugeLogits) {
  CandidateSet set = make_set({FLT_MAX, FLT_MAX, -FLT_MAX});
  const std::vector<double> p = candidate_probs(set);
  EXPECT_DOUBLE_EQ(p[0], 0.5);
  EXPECT_DOUBLE_EQ(p[1], 0.5);
  EXPECT_DOUBLE_EQ(p[2], 0.0);
}

TEST(PickGreedy, LowestIdWinsTiesSortedOrNot) {
  CandidateSet set = make_set({1.0f, 3.0f, 2.0f, 3.0f});
  EXPECT_EQ(pick_greedy(set), 1);
  sort_candidates(&set);
  EXPECT_EQ(pick_greedy(set), 1);
}

TEST(ArgmaxUnmasked, LowestIdOfTheMaximaSkippingMasked) {
  EXPECT_EQ(argmax_unmasked(std::vector<float>{-kInf, 1.0f, 3.0f, 3.0f}), 2);
  EXPECT_EQ(argmax_unmasked(std::vector<float>{-kInf, -FLT_MAX}), 1);
  const std::vector<float> none(5, -kInf);
  EXPECT_NE(error_message([&] { argmax_unmasked(none); }).find("masked"), std::string::npos);
}

TEST(PickSampled, WalksCumulativeWeights) {
  const CandidateSet set = make_set({0.0f, 0.0f, 0.0f, 0.0f});  // uniform
  EXPECT_EQ(pick_sampled(set, 1.0f, 0.0), 0);
  EXPECT_EQ(pick_sampled(set, 1.0f, 0.3), 1);
  EXPECT_EQ(pick_sampled(set, 1.0f, 0.6), 2);
  EXPECT_EQ(pick_sampled(set, 1.0f, 0.9999999), 3);
}

TEST(PickSampled, TinyTemperatureIsArgmaxHugeIsNearlyUniform) {
  const CandidateSet set = make_set(four_way());
  for (double u : {0.0, 0.25, 0.5, 0.75, 0.999999}) {
    EXPECT_EQ(pick_sampled(set, 1e-30f, u), 0) << u;
  }
  EXPECT_EQ(pick_sampled(set, 1e30f, 0.3), 1);
  EXPECT_EQ(pick_sampled(set, 1e30f, 0.8), 3);
}

TEST(PickSampled, MaskedMassNeverChosen) {
  // -FLT_MAX underflows to weight 0: even u near 1 must not land on it.
  const CandidateSet set = make_set({0.0f, -FLT_MAX});
  EXPECT_EQ(pick_sampled(set, 1.0f, 0.9999999999), 0);
}

}  // namespace
}  // namespace keel::sampling
