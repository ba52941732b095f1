#include "engine/batch_plan.h"

#include <gtest/gtest.h>

namespace keel::engine {
namespace {

int64_t total(const std::vector<SlotShare>& plan) {
  int64_t n = 0;
  for (const SlotShare& s : plan) n += s.n_tokens;
  return n;
}

TEST(BatchPlan, DecodesFirstThenPrefillChunksFcfsWithinBudget) {
  std::vector<SlotDemand> d = {
      {0, false, 100, 5},  // admitted later
      {1, true, 1, 0},
      {2, false, 30, 3},
      {3, true, 1, 1},
  };
  std::vector<SlotShare> plan = plan_batch(d, 40, 0);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].slot, 1);
  EXPECT_EQ(plan[1].slot, 3);
  EXPECT_EQ(plan[2].slot, 2);  // FCFS: admitted 3 before 5
  EXPECT_EQ(plan[2].n_tokens, 30);
  EXPECT_EQ(plan[3].slot, 0);
  EXPECT_EQ(plan[3].n_tokens, 8);
  EXPECT_EQ(total(plan), 40);
}

TEST(BatchPlan, DecodersBeyondTheBudgetRotate) {
  std::vector<SlotDemand> d;
  for (int i = 0; i < 5; ++i) d.push_back({i, true, 1, static_cast<uint64_t>(i)});
  std::vector<int> served(5, 0);
  for (uint64_t step = 0; step < 10; ++step) {
    std::vector<SlotShare> plan = plan_batch(d, 2, step);
    ASSERT_EQ(plan.size(), 2u);
    for (const SlotShare& s : plan) ++served[s.slot];
  }
  for (int n : served) EXPECT_EQ(n, 4);  // fair: 20 decode tokens over 5 slots
}

TEST(BatchPlan, EmptyAndExhaustedBudgets) {
  EXPECT_TRUE(plan_batch({}, 10, 0).empty());
  std::vector<SlotDemand> d = {{0, false, 10, 0}};
  EXPECT_TRUE(plan_batch(d, 0, 0).empty());
  EXPECT_EQ(total(plan_batch(d, 3, 0)), 3);
}

}  // namespace
}  // namespace keel::engine
