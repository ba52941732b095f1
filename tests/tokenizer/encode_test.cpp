// Encoding behaviour beyond the reference vectors: BOS/EOS, special-token parsing,
// end-of-generation ids, the stories260K prompt, input validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/error.h"
#include "shared_vocab.h"

namespace keel::tokenizer {
namespace {

// Options the tests use often (all fields named: GCC 12 warns about omitted ones).
const EncodeOptions kNoBos{.add_bos = false, .add_eos = std::nullopt, .parse_special = false};
const DecodeOptions kWholeText{.render_special = false, .strip_space_prefix = true};

using test::reference_vocab;

TEST(Encode, Stories260KPromptMatchesReferenceGeneration) {
  const Tokenizer& tok = test::stories_vocab();
  // ../shared/reference/stories260K/generate.json: BOS + 4 prompt tokens.
  EXPECT_EQ(tok.encode("Once upon a time"), (std::vector<TokenId>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok.kind(), VocabKind::kSpm);
  EXPECT_EQ(tok.vocab_size(), 512);
  // Its metadata sets separator/padding to 0xFFFFFFFF: unset, not an error.
  EXPECT_EQ(tok.special_ids().sep, kNoToken);
  EXPECT_EQ(tok.special_ids().pad, kNoToken);
  EXPECT_EQ(tok.decode(tok.encode("Once upon a time"), kWholeText), "Once upon a time");
}

TEST(Encode, BosAndEosFollowOptionsThenMetadata) {
  const Tokenizer& spm = reference_vocab("llama-spm");
  EXPECT_TRUE(spm.add_bos_default());
  EXPECT_FALSE(spm.add_eos_default());
  EXPECT_EQ(spm.encode("Hello world"), (std::vector<TokenId>{1, 15043, 3186}));
  EXPECT_EQ(spm.encode("Hello world", kNoBos), (std::vector<TokenId>{15043, 3186}));
  EXPECT_EQ(spm.encode("Hello world", {.add_bos = false, .add_eos = true, .parse_special = false}),
            (std::vector<TokenId>{15043, 3186, 2}));
  EXPECT_EQ(spm.encode("", {}), (std::vector<TokenId>{1}));

  const Tokenizer& gpt2 = reference_vocab("gpt-2");
  EXPECT_FALSE(gpt2.add_bos_default());
  EXPECT_EQ(gpt2.encode("Hello", {.add_bos = true, .add_eos = std::nullopt, .parse_special = false})
                .front(),
            gpt2.special_ids().bos);

  const Tokenizer& bert = reference_vocab("bert-bge");
  // BERT frames with [CLS] ... [SEP].
  EXPECT_EQ(bert.encode("hello"), (std::vector<TokenId>{101, 7592, 102}));
}

TEST(Encode, ControlTokenTextIsParsedOnlyWhenAsked) {
  const Tokenizer& phi = reference_vocab("phi-3");
  const TokenId user = phi.find_token("<|user|>");
  const TokenId end = phi.find_token("<|end|>");
  ASSERT_NE(user, kNoToken);
  ASSERT_NE(end, kNoToken);
  const auto parsed = phi.encode(
      "<|user|>\nHi<|end|>", {.add_bos = false, .add_eos = std::nullopt, .parse_special = true});
  ASSERT_GE(parsed.size(), 3u);
  EXPECT_EQ(parsed.front(), user);
  EXPECT_EQ(parsed.back(), end);
  const auto literal = phi.encode("<|user|>\nHi<|end|>", kNoBos);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), user), 0);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), end), 0);
  // The literal text still decodes back to itself.
  EXPECT_EQ(phi.decode(literal, kWholeText), "<|user|>\nHi<|end|>");
  // Rendered specials: the parsed form decodes to the same text.
  EXPECT_EQ(phi.decode(parsed, {.render_special = true, .strip_space_prefix = true}),
            "<|user|>\nHi<|end|>");
  EXPECT_EQ(phi.decode(parsed, kWholeText), "\nHi");
}

TEST(Encode, UserDefinedTokensAreAlwaysWhole) {
  const Tokenizer& phi = reference_vocab("phi-3");  // its "</s>" is user-defined
  ASSERT_EQ(phi.token_type(2), TokenType::kUserDefined);
  const auto ids = phi.encode("a</s>b", kNoBos);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 2), ids.end());
}

TEST(Encode, LeftmostLongestSpecialMatch) {
  const Tokenizer& tok = reference_vocab("starcoder");
  const TokenId fim_prefix = tok.find_token("<fim_prefix>");
  ASSERT_NE(fim_prefix, kNoToken);
  const auto ids =
      tok.encode("x<fim_prefix><fim_prefix>y",
                 {.add_bos = std::nullopt, .add_eos = std::nullopt, .parse_special = true});
  EXPECT_EQ(std::count(ids.begin(), ids.end(), fim_prefix), 2);
}

TEST(Encode, EndOfGenerationTokens) {
  const Tokenizer& phi = reference_vocab("phi-3");
  EXPECT_TRUE(phi.is_end_of_generation(phi.special_ids().eos));
  EXPECT_TRUE(phi.is_end_of_generation(phi.find_token("<|end|>")));
  EXPECT_FALSE(phi.is_end_of_generation(phi.find_token("<|user|>")));
  EXPECT_FALSE(phi.is_end_of_generation(15043));
  EXPECT_FALSE(phi.is_end_of_generation(-5));
  EXPECT_FALSE(phi.is_end_of_generation(1 << 30));
  const auto& eog = phi.end_of_generation_ids();
  EXPECT_NE(std::find(eog.begin(), eog.end(), phi.find_token("<|end|>")), eog.end());

  const Tokenizer& stories = test::stories_vocab();
  EXPECT_EQ(stories.end_of_generation_ids(), (std::vector<TokenId>{2}));
}

TEST(Encode, RejectsInvalidUtf8AndBadIds) {
  const Tokenizer& tok = reference_vocab("gpt-2");
  try {
    tok.encode("abc\xFF");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_THROW(tok.token_to_piece(-1), Error);
  EXPECT_THROW(tok.token_to_piece(tok.vocab_size()), Error);
  EXPECT_THROW(tok.decode({0, tok.vocab_size()}), Error);
  EXPECT_THROW(tok.token_text(-1), Error);
}

TEST(Encode, ConcurrentEncodesAgree) {
  const Tokenizer& tok = reference_vocab("deepseek-llm");
  const std::string text = "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ 3333333";
  const auto expected = tok.encode(text);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (tok.encode(text) != expected) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace keel::tokenizer
