// Every vector in ../shared/reference/vocab/*.inp/.out: no BOS/EOS, special text not parsed.
#include <gtest/gtest.h>

#include "shared_vocab.h"

namespace keel::tokenizer {
namespace {

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += std::to_string(id) + " ";
  return s;
}

class ReferenceVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceVectors, EveryCaseMatches) {
  const Tokenizer& tok = test::reference_vocab(GetParam());
  const auto cases = test::reference_vectors(GetParam());
  ASSERT_GT(cases.size(), 30u);
  int failures = 0;
  for (const auto& c : cases) {
    const auto got =
        tok.encode(c.input, {.add_bos = false, .add_eos = false, .parse_special = false});
    if (got != c.expected) {
      ++failures;
      ADD_FAILURE() << GetParam() << " input '" << c.input << "'\n  expected " << show(c.expected)
                    << "\n  got      " << show(got);
    }
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Vocab, ReferenceVectors,
                         ::testing::Values("llama-spm", "phi-3", "bert-bge", "gpt-2",
                                           "deepseek-coder", "deepseek-llm", "starcoder"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace keel::tokenizer
