// Fill-in-the-middle prompts on real vocabularies: StarCoder's and DeepSeek-Coder's FIM
// tokens are found by their text and frame the encoded prefix and suffix; a vocabulary
// without them (Llama 2's) gives none; the user's own "<fim_middle>" stays plain text.
#include "tokenizer/fill_in_middle.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "shared_vocab.h"

namespace keel::tokenizer {
namespace {

void expect_fim(const Tokenizer& tok, const char* pre, const char* suf, const char* mid) {
  const std::string prefix = "def add(a, b):\n    return ", suffix = "\n\nprint(add(1, 2)) # <fim_middle>";
  const auto fim = fill_in_middle(tok, prefix, suffix);
  ASSERT_TRUE(fim);
  EncodeOptions plain;
  plain.add_bos = false;
  std::vector<TokenId> want;
  if (tok.add_bos_default()) want.push_back(tok.special_ids().bos);
  want.push_back(tok.find_token(pre));
  for (TokenId t : tok.encode(prefix, plain)) want.push_back(t);
  want.push_back(tok.find_token(suf));
  for (TokenId t : tok.encode(suffix, plain)) want.push_back(t);
  want.push_back(tok.find_token(mid));
  EXPECT_EQ(*fim, want);
  EXPECT_NE(want[want.size() - 1], kNoToken);
  // The suffix's literal "<fim_middle>" is text, not the control token: it occurs once.
  EXPECT_EQ(std::count(fim->begin(), fim->end(), tok.find_token(mid)), 1);
}

TEST(FillInMiddle, StarCoderAndDeepSeekCoderSpellings) {
  expect_fim(keel::test::reference_vocab("starcoder"), "<fim_prefix>", "<fim_suffix>", "<fim_middle>");
  expect_fim(keel::test::reference_vocab("deepseek-coder"), "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
             "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>");
}

TEST(FillInMiddle, NoneWithoutFimTokens) {
  EXPECT_FALSE(fill_in_middle(keel::test::reference_vocab("llama-spm"), "a", "b"));
  EXPECT_FALSE(fill_in_middle(keel::test::stories_vocab(), "a", "b"));
}

}  // namespace
}  // namespace keel::tokenizer
