// Pre-tokenizer splits: every known `pre` compiles and covers its input exactly; a few
// splits that distinguish the families.
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/pretokenizer_patterns.h"

namespace keel::tokenizer {
namespace {

std::vector<std::string> words(const std::string& pre, const std::string& text) {
  const PreTokenizer p = PreTokenizer::for_name(pre);
  std::vector<std::string> out;
  for (auto w : p.split(text)) out.emplace_back(w);
  return out;
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, EveryKnownNameCompilesAndCoversTheText) {
  const std::string text =
      "Hello, y'all! I'M 12345 times\n\n  there?\t你好世界 ÀÉÎ éé Ελληνικά 🦙.cpp $x+=1; "
      "---";
  for (const auto& set : known_pre_tokenizers()) {
    for (const auto& name : set.names) {
      ASSERT_TRUE(PreTokenizer::is_known(name));
      const PreTokenizer p = PreTokenizer::for_name(name);
      EXPECT_EQ(p.name(), name);
      std::string joined;
      for (auto w : p.split(text)) {
        EXPECT_FALSE(w.empty()) << name;
        joined += w;
      }
      EXPECT_EQ(joined, text) << name;
    }
  }
}

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(words("gpt-2", "Hello world's  end 123"),
            (Words{"Hello", " world", "'s", " ", " end", " 123"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndIgnoresMerges) {
  EXPECT_EQ(words("llama-bpe", "1234567 I'M"), (Words{"123", "456", "7", " I", "'M"}));
  EXPECT_TRUE(PreTokenizer::for_name("llama3").ignore_merges());
  EXPECT_FALSE(PreTokenizer::for_name("gpt-2").ignore_merges());
}

TEST(PreTokenizer, Qwen2SplitsSingleDigits) {
  EXPECT_EQ(words("qwen2", "x 123"), (Words{"x", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, Gpt4oSplitsCamelCase) {
  EXPECT_EQ(words("gpt-4o", "camelCase"), (Words{"camel", "Case"}));
}

TEST(PreTokenizer, DeepseekLlmAppliesItsRegexesInSequence) {
  // Newlines first, then letters (with one leading space), then trailing whitespace.
  EXPECT_EQ(words("deepseek-llm", "a  \nb c"), (Words{"a", "  ", "\n", "b", " c"}));
}

TEST(PreTokenizer, DollarMeansEndOfPiece) {
  // Not also "before a final newline" (PCRE's default): "x$" must not match in "x\n".
  const PreTokenizer p = PreTokenizer::from_patterns("dollar", {"x$"});
  const auto pieces = p.split("x\n");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0], "x\n");
  EXPECT_EQ(p.split("ax").size(), 2u);
}

TEST(PreTokenizer, UnknownNameFallsBackAndBadPatternThrows) {
  EXPECT_FALSE(PreTokenizer::is_known("not-a-real-pre"));
  EXPECT_EQ(PreTokenizer::for_name("not-a-real-pre").name(), "gpt-2");
  EXPECT_THROW(PreTokenizer::from_patterns("bad", {"(unclosed"}), Error);
}

TEST(PreTokenizer, EmptyMatchesDoNotLoop) {
  const PreTokenizer p = PreTokenizer::from_patterns("lookahead", {"(?=\\d)"});
  std::string joined;
  for (auto w : p.split("a1b2")) joined += w;
  EXPECT_EQ(joined, "a1b2");
}

TEST(PreTokenizer, LongWhitespaceRunIsHandled) {
  const std::string text = "a" + std::string(200000, ' ') + "b";
  size_t total = 0;
  for (auto w : PreTokenizer::for_name("llama3").split(text)) total += w.size();
  EXPECT_EQ(total, text.size());
}

}  // namespace
}  // namespace keel::tokenizer
