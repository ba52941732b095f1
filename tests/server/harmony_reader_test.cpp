// HarmonyReader: gpt-oss replies split into reasoning and content, whatever the stream's
// split; replies that do not follow the format come out whole as content.
#include "server/harmony_reader.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace keel::server {
namespace {

struct Split {
  std::string content, reasoning;
};

// Reads `text` pushed in pieces cut at `cuts` (ascending offsets), then finishes.
Split read(const std::string& text, const std::vector<size_t>& cuts) {
  HarmonyReader r(true);
  Split out;
  size_t at = 0;
  auto take = [&](const HarmonyReader::Parts& p) {
    out.content += p.content;
    out.reasoning += p.reasoning;
  };
  for (size_t c : cuts) {
    take(r.push(std::string_view(text).substr(at, c - at)));
    at = c;
  }
  take(r.push(std::string_view(text).substr(at)));
  take(r.finish());
  return out;
}

// Every one- and two-cut split gives the same parts as the whole text at once.
void expect_every_split(const std::string& text, const std::string& content, const std::string& reasoning) {
  const Split whole = read(text, {});
  EXPECT_EQ(whole.content, content) << text;
  EXPECT_EQ(whole.reasoning, reasoning) << text;
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); b += 3) {
      const Split s = read(text, {a, b});
      ASSERT_EQ(s.content, content) << text << " cut at " << a << ", " << b;
      ASSERT_EQ(s.reasoning, reasoning) << text << " cut at " << a << ", " << b;
    }
  }
}

TEST(HarmonyReader, AnalysisIsReasoningAndFinalIsContent) {
  expect_every_split("<|channel|>analysis<|message|>The user greets; answer briefly.<|end|>"
                     "<|start|>assistant<|channel|>final<|message|>Hello! How can I help?",
                     "Hello! How can I help?", "The user greets; answer briefly.");
}

TEST(HarmonyReader, FinalOnlyAndCommentaryAreContent) {
  expect_every_split("<|channel|>final<|message|>Just the answer.", "Just the answer.", "");
  expect_every_split("<|channel|>commentary<|message|>Looking it up.<|end|><|start|>assistant<|channel|>final"
                     "<|message|> Done.",
                     "Looking it up. Done.", "");
}

TEST(HarmonyReader, HeadersWithRecipientsAndConstraintsAreDropped) {
  expect_every_split("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>commentary to=functions.f "
                     "<|constrain|>json<|message|>{\"x\":1}",
                     "{\"x\":1}", "a");
}

TEST(HarmonyReader, CutShortInsideTheAnalysisKeepsWhatWasThought) {
  // max_tokens ended the reply mid-thought, or inside the next header.
  expect_every_split("<|channel|>analysis<|message|>Let me thi", "", "Let me thi");
  expect_every_split("<|channel|>analysis<|message|>Done thinking.<|end|><|start|>assistant<|chan", "",
                     "Done thinking.");
}

TEST(HarmonyReader, TextLikeAMarkerIsText) {
  expect_every_split("<|channel|>final<|message|>a <| b <|x|> c <", "a <| b <|x|> c <", "");
}

TEST(HarmonyReader, RepliesThatIgnoreTheFormatAreContent) {
  expect_every_split("Plain text, no markers at all.", "Plain text, no markers at all.", "");
  // A long "header" that never opens a message: given out as content once it is too long.
  const std::string long_text(HarmonyReader::kMaxHeaderBytes + 50, 'x');
  const Split s = read(long_text + "<|end|>tail", {10, HarmonyReader::kMaxHeaderBytes + 20});
  EXPECT_EQ(s.content, long_text + "tail");
  EXPECT_EQ(s.reasoning, "");
}

TEST(HarmonyReader, ContentStreamsBeforeTheEnd) {
  HarmonyReader r(true);
  EXPECT_EQ(r.push("<|channel|>analysis<|message|>think").reasoning, "think");
  const HarmonyReader::Parts p = r.push("ing<|end|><|start|>assistant<|channel|>final<|message|>Hi");
  EXPECT_EQ(p.reasoning, "ing");
  EXPECT_EQ(p.content, "Hi");
  EXPECT_EQ(r.push(" there<|en").content, " there");  // a possible marker waits
  EXPECT_EQ(r.finish().content, "<|en");
}

TEST(HarmonyReader, InactivePassesEverythingThrough) {
  HarmonyReader r;
  EXPECT_FALSE(r.active());
  EXPECT_EQ(r.push("<|channel|>analysis<|message|>x").content, "<|channel|>analysis<|message|>x");
  EXPECT_EQ(r.finish().content, "");
}

}  // namespace
}  // namespace keel::server
