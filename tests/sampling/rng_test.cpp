#include <array>
#include <cstdint>

#include <gtest/gtest.h>

#include "core/error.h"
#include "sampling/rng.h"

namespace keel::sampling {
namespace {

TEST(Rng, SplitMix64MatchesPublishedOutputs) {
  // Reference outputs of splitmix64 for seed 1234567 (Vigna's splitmix64.c).
  uint64_t state = 1234567;
  const uint64_t expected[] = {6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
                               4593380528125082431ULL, 16408922859458223821ULL};
  for (uint64_t e : expected) EXPECT_EQ(splitmix64_next(&state), e);
}

TEST(Rng, Xoshiro256StarStarMatchesReferenceFromState1234) {
  Rng rng = Rng::from_state({1, 2, 3, 4});
  const uint64_t expected[] = {11520ULL,
                               0ULL,
                               1509978240ULL,
                               1215971899390074240ULL,
                               1216172134540287360ULL,
                               607988272756665600ULL,
                               16172922978634559625ULL,
                               8476171486693032832ULL,
                               10595114339597558777ULL,
                               2904607092377533576ULL};
  for (uint64_t e : expected) EXPECT_EQ(rng.next_u64(), e);
}

TEST(Rng, SeedingThroughSplitMixMatchesOtherImplementations) {
  // rand_xoshiro's Xoshiro256StarStar::seed_from_u64(42) fills the state the same way.
  Rng rng(42);
  EXPECT_EQ(rng.next_u64(), 1546998764402558742ULL);
  EXPECT_EQ(rng.next_u64(), 6990951692964543102ULL);
  EXPECT_EQ(rng.next_u64(), 12544586762248559009ULL);
}

TEST(Rng, SameSeedSameStreamDifferentSeedDifferentStream) {
  Rng a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= x != c.next_u64();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, UniformIsInUnitIntervalAndUsesTop53Bits) {
  Rng a(123), b(123);
  double sum = 0.0;
  for (int i = 0; i < 10000; ++i) {
    const double u = a.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    EXPECT_EQ(u, static_cast<double>(b.next_u64() >> 11) / 9007199254740992.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(Rng, AllZeroStateIsRejected) {
  EXPECT_THROW(Rng::from_state({0, 0, 0, 0}), Error);
}

}  // namespace
}  // namespace keel::sampling
