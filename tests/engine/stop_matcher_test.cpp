#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace keel::engine::test {
namespace {

// Feeds pieces; returns (emitted text, stopped).
std::pair<std::string, bool> run(std::vector<std::string> stops, std::vector<std::string> pieces) {
  StopMatcher m(std::move(stops));
  std::string out;
  for (const std::string& p : pieces) {
    StopMatcher::Result r = m.push(p);
    out += r.emit;
    if (r.stopped) return {out, true};
  }
  return {out + m.flush(), false};
}

TEST(StopMatcher, MatchesAcrossPiecesAndNeverEmitsTheStop) {
  EXPECT_EQ(run({"END"}, {"hello E", "N", "D more"}), std::make_pair(std::string("hello "), true));
  EXPECT_EQ(run({"\n\n"}, {"a\n", "\nb"}), std::make_pair(std::string("a"), true));
  EXPECT_EQ(run({"xyz"}, {"x", "y", "z"}), std::make_pair(std::string(""), true));
}

TEST(StopMatcher, ReleasesAFalseStartOnceItCannotMatch) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("an E").emit, "an ");  // "E" could start END: held
  EXPECT_EQ(m.held_bytes(), 1u);
  EXPECT_EQ(m.push("N").emit, "");        // "EN" still could
  EXPECT_EQ(m.push("X").emit, "ENX");     // no longer
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  EXPECT_EQ(run({"cd", "bcde"}, {"abcdef"}), std::make_pair(std::string("a"), true));
  EXPECT_EQ(run({"bcde", "cd"}, {"ab", "c", "de"}), std::make_pair(std::string("a"), true));
  EXPECT_EQ(run({"de", "bcx"}, {"ab", "c", "de"}), std::make_pair(std::string("abc"), true));
}

// matched(): the stop string that stopped the text (the earliest; at a tie the first
// listed), empty until then and when the text ends without one.
TEST(StopMatcher, MatchedNamesTheStopStringThatStopped) {
  auto matched = [](std::vector<std::string> stops, std::vector<std::string> pieces) {
    StopMatcher m(std::move(stops));
    for (const std::string& p : pieces) {
      if (m.push(p).stopped) return m.matched();
      EXPECT_EQ(m.matched(), "");
    }
    m.flush();
    return m.matched();
  };
  EXPECT_EQ(matched({"cd", "bcde"}, {"abcdef"}), "bcde");
  EXPECT_EQ(matched({"bcde", "cd"}, {"ab", "c", "de"}), "bcde");
  EXPECT_EQ(matched({"de", "bcx"}, {"ab", "c", "de"}), "de");
  EXPECT_EQ(matched({"bc", "bcd"}, {"abcd"}), "bc");  // same start: the first listed
  EXPECT_EQ(matched({"bcd", "bc"}, {"abcd"}), "bcd");
  EXPECT_EQ(matched({"zz"}, {"abc"}), "");
}

TEST(StopMatcher, OverlappingPrefixesHoldTheLongestPossibleStart) {
  // "aab" inside "aaab": the held tail must restart correctly.
  EXPECT_EQ(run({"aab"}, {"a", "a", "a", "b"}), std::make_pair(std::string("a"), true));
  EXPECT_EQ(run({"abab"}, {"ab", "a", "bab"}), std::make_pair(std::string(""), true));
}

TEST(StopMatcher, NoStopsPassesEverythingAndFlushReturnsTheTail) {
  EXPECT_EQ(run({}, {"a", "b"}), std::make_pair(std::string("ab"), false));
  EXPECT_EQ(run({"zz"}, {"az"}), std::make_pair(std::string("az"), false));
}

TEST(StopMatcher, CutsOnlyAtUtf8BoundariesForUtf8Stops) {
  // "é" is C3 A9; the stop "éx" must not split the character when held.
  StopMatcher m({"\xC3\xA9x"});
  EXPECT_EQ(m.push("a\xC3\xA9").emit, "a");
  EXPECT_EQ(m.push("y").emit, "\xC3\xA9y");
}

// Random pieces and stops: the emitted text equals the whole text cut at the first stop.
TEST(StopMatcher, RandomizedAgainstWholeTextSearch) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::vector<int32_t> r = random_prompt(seed, 40, 6);  // ids 2..5 → letters a..d
    std::string text;
    for (int32_t v : r) text += static_cast<char>('a' + (v - 2));
    std::vector<std::string> stops = {text.substr(seed % 30, 2 + seed % 3), "dddd"};
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      size_t n = 1 + (seed * 7 + i) % 4;
      pieces.push_back(text.substr(i, n));
      i += n;
    }
    size_t first = std::string::npos;
    for (const auto& s : stops) first = std::min(first, text.find(s));
    auto [out, stopped] = run(stops, pieces);
    ASSERT_TRUE(stopped) << seed;
    ASSERT_EQ(out, text.substr(0, first)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace keel::engine::test
