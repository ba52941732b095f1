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

// Repository context and a started middle (llama-server's /infill): this StarCoder
// vocabulary has a repo token (<repo_name>) and a file separator (<file_sep>), so the
// context is REPO "myproject\n", each chunk SEP name\n text, and the hole's file
// SEP "filename\n"; budgets keep the prefix's
// tail, the suffix's head and the context's tail. DeepSeek-Coder has neither: chunks are
// joined by the snippet marker.
TEST(FillInMiddle, RepositoryContextMiddleAndBudgets) {
  const Tokenizer& tok = keel::test::reference_vocab("starcoder");
  EncodeOptions plain;
  plain.add_bos = false;
  auto enc = [&](std::string_view t) { return tok.encode(t, plain); };
  auto cat = [](std::vector<TokenId>& to, const std::vector<TokenId>& from) { to.insert(to.end(), from.begin(), from.end()); };
  FimRequest r;
  r.prefix = "def add(a, b):\n    return ";
  r.suffix = "\n\nprint(add(1, 2))\n";
  r.extra = {{"util.py", "import os"}, {"", "x = 1"}};
  r.middle = "a +";
  const TokenId sep = tok.find_token("<file_sep>");
  ASSERT_NE(sep, kNoToken);
  const TokenId repo = tok.find_token("<repo_name>");
  ASSERT_NE(repo, kNoToken);
  std::vector<TokenId> extra = {repo};
  cat(extra, enc("myproject\n"));
  for (auto [name, text] : {std::pair{"util.py\n", "import os"}, std::pair{"tmp\n", "x = 1"}}) {
    extra.push_back(sep);
    cat(extra, enc(name));
    cat(extra, enc(text));
  }
  extra.push_back(sep);
  cat(extra, enc("filename\n"));
  auto expected = [&](size_t extra_keep, size_t prefix_keep, size_t suffix_keep) {
    std::vector<TokenId> want;
    if (tok.add_bos_default()) want.push_back(tok.special_ids().bos);
    want.insert(want.end(), extra.end() - static_cast<std::ptrdiff_t>(extra_keep), extra.end());
    want.push_back(tok.find_token("<fim_prefix>"));
    const auto p = enc(r.prefix);
    want.insert(want.end(), p.end() - static_cast<std::ptrdiff_t>(prefix_keep), p.end());
    want.push_back(tok.find_token("<fim_suffix>"));
    const auto x = enc(r.suffix);
    want.insert(want.end(), x.begin(), x.begin() + static_cast<std::ptrdiff_t>(suffix_keep));
    want.push_back(tok.find_token("<fim_middle>"));
    cat(want, enc(r.middle));
    return want;
  };
  auto whole = fill_in_middle(tok, r);
  ASSERT_TRUE(whole);
  EXPECT_EQ(*whole, expected(extra.size(), enc(r.prefix).size(), enc(r.suffix).size()));
  r.prefix_max = 3;
  r.suffix_max = 2;
  r.extra_max = 4;
  auto cut = fill_in_middle(tok, r);
  ASSERT_TRUE(cut);
  EXPECT_EQ(*cut, expected(4, 3, 2));
  r.extra_max = 0;  // no room: the context goes, the hole stays
  EXPECT_EQ(*fill_in_middle(tok, r), expected(0, 3, 2));

  const Tokenizer& ds = keel::test::reference_vocab("deepseek-coder");
  EncodeOptions ds_plain;
  ds_plain.add_bos = false;
  FimRequest d;
  d.prefix = "a";
  d.suffix = "b";
  d.extra = {{"f.py", "x = 1"}};
  const auto got = fill_in_middle(ds, d);
  ASSERT_TRUE(got);
  std::vector<TokenId> snippet = ds.encode("\n\n--- snippet ---\n\n", ds_plain), body = ds.encode("x = 1", ds_plain);
  snippet.insert(snippet.end(), body.begin(), body.end());
  const size_t at = ds.add_bos_default() ? 1 : 0;
  ASSERT_GT(got->size(), at + snippet.size());
  EXPECT_EQ(std::vector<TokenId>(got->begin() + static_cast<std::ptrdiff_t>(at),
                                 got->begin() + static_cast<std::ptrdiff_t>(at + snippet.size())), snippet);
}

TEST(FillInMiddle, NoneWithoutFimTokens) {
  EXPECT_FALSE(fill_in_middle(keel::test::reference_vocab("llama-spm"), "a", "b"));
  EXPECT_FALSE(fill_in_middle(keel::test::stories_vocab(), "a", "b"));
}

}  // namespace
}  // namespace keel::tokenizer
