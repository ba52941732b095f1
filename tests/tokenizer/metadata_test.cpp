// Loading edge cases with small hand-made GGUF vocabularies.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf.h"
#include "tiny_vocab.h"
#include "tokenizer/tokenizer.h"

namespace keel::tokenizer {
namespace {

// Options the tests use often (all fields named: GCC 12 warns about omitted ones).
const EncodeOptions kNoBos{.add_bos = false, .add_eos = std::nullopt, .parse_special = false};
const DecodeOptions kWholeText{.render_special = false, .strip_space_prefix = true};

Tokenizer load(const std::string& path) { return Tokenizer::from_gguf(gguf::GgufFile(path)); }

ErrorCode load_error(const std::string& path) {
  try {
    load(path);
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected an error loading " << path;
  return ErrorCode::kInternal;
}

TEST(Metadata, UnknownPreFallsBackToGpt2Split) {
  auto spec = test::byte_level_spec({"h e", "l l", "he ll", "hell o"});
  spec.pre = "some-future-model";
  const Tokenizer tok = load(test::write_tiny_vocab("unknown_pre", spec));
  EXPECT_EQ(tok.pre_tokenizer(), "gpt-2");
  const auto ids = tok.encode("hello hello");
  // "hello" merges fully; " hello" is a separate word (GPT-2 split): "Ġ" + "hello".
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(tok.token_text(ids[0]), "hello");
  EXPECT_EQ(tok.token_text(ids[1]), "\xC4\xA0");
  EXPECT_EQ(ids[2], ids[0]);
  EXPECT_EQ(tok.decode(ids), "hello hello");
}

TEST(Metadata, MergeRanksDecideOrder) {
  // "a b" ranks before "b c": "abc" -> "ab" "c", never "a" "bc".
  auto spec = test::byte_level_spec({"a b", "b c"});
  const Tokenizer tok = load(test::write_tiny_vocab("ranks", spec));
  const auto ids = tok.encode("abc");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(tok.token_text(ids[0]), "ab");
  auto spec2 = test::byte_level_spec({"b c", "a b"});
  const Tokenizer tok2 = load(test::write_tiny_vocab("ranks2", spec2));
  const auto ids2 = tok2.encode("abc");
  ASSERT_EQ(ids2.size(), 2u);
  EXPECT_EQ(tok2.token_text(ids2[1]), "bc");
}

TEST(Metadata, Llama3EmitsWholeWordTokensWithoutMerges) {
  // "abc" is a token, but the merges alone only reach "ab" + "c".
  auto spec = test::byte_level_spec({"a b"});
  spec.tokens.push_back("abc");
  spec.pre = "llama-bpe";
  const Tokenizer llama3 = load(test::write_tiny_vocab("llama3_pre", spec));
  EXPECT_EQ(llama3.encode("abc").size(), 1u);
  spec.pre = "gpt-2";
  const Tokenizer gpt2 = load(test::write_tiny_vocab("gpt2_pre", spec));
  EXPECT_EQ(gpt2.encode("abc").size(), 2u);
}

TEST(Metadata, SpmScoresDecideMergesAndBytesFallBack) {
  test::TinyVocabSpec spec;
  spec.model = "llama";
  spec.pre = "";
  spec.tokens = {"<unk>",
                 "<s>",
                 "</s>",
                 "\xE2\x96\x81",
                 "a",
                 "b",
                 "ab",
                 "\xE2\x96\x81"
                 "a"};
  spec.types = {2, 3, 3, 1, 1, 1, 1, 1};
  spec.scores = {0, 0, 0, -1, -1, -1, -2, -3};  // "ab" beats "▁a"
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    spec.tokens.push_back(name);
    spec.types.push_back(6);
    spec.scores.push_back(0);
  }
  const Tokenizer tok = load(test::write_tiny_vocab("spm", spec));
  EXPECT_EQ(tok.encode("ab", kNoBos), (std::vector<TokenId>{3, 6}));
  // "é" is not a token: its two bytes.
  EXPECT_EQ(tok.encode("é", kNoBos), (std::vector<TokenId>{3, 8 + 0xC3, 8 + 0xA9}));
  EXPECT_EQ(tok.decode(tok.encode("é ab"), kWholeText), "é ab");
}

TEST(Metadata, UnsetIdsAndMissingPieces) {
  auto spec = test::byte_level_spec({"a b"});
  spec.extra.emplace_back("bos_token_id", gguf::Value::u32(0xFFFFFFFFu));
  spec.extra.emplace_back("eos_token_id", gguf::Value::u32(7));
  spec.extra.emplace_back("padding_token_id", gguf::Value::u32(99999));  // out of range
  const Tokenizer tok = load(test::write_tiny_vocab("ids", spec));
  EXPECT_EQ(tok.vocab_size(), 257);
  EXPECT_EQ(tok.special_ids().bos, kNoToken);
  EXPECT_EQ(tok.special_ids().eos, 7);
  EXPECT_EQ(tok.special_ids().pad, kNoToken);
  EXPECT_TRUE(tok.is_end_of_generation(7));
  // A metadata default to add a missing BOS is dropped; asking for it is a clear error.
  auto wants_bos = test::byte_level_spec({"a b"});
  wants_bos.extra.emplace_back("add_bos_token", gguf::Value::boolean(true));
  const Tokenizer tok2 = load(test::write_tiny_vocab("wants_bos", wants_bos));
  EXPECT_FALSE(tok2.add_bos_default());
  EXPECT_EQ(tok2.encode("ab").size(), 1u);
  EXPECT_THROW(tok.encode("x", {.add_bos = true, .add_eos = std::nullopt, .parse_special = false}),
               Error);
}

// A byte-level vocabulary plus the given control tokens (GGUF token type 3).
test::TinyVocabSpec with_controls(const std::vector<std::string>& controls) {
  auto spec = test::byte_level_spec({"a b"});
  spec.types.assign(spec.tokens.size(), 1);
  for (const std::string& c : controls) {
    spec.tokens.push_back(c);
    spec.types.push_back(3);
  }
  return spec;
}

TEST(Metadata, HarmonyEndClosesAMessageNotTheReply) {
  // gpt-oss: <|end|> ends the analysis message and the final one follows; <|return|> and
  // <|call|> end the reply. Phi-3 style vocabularies (no <|return|>/<|call|>) keep <|end|>.
  const Tokenizer harmony = load(test::write_tiny_vocab(
      "harmony", with_controls({"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>"})));
  EXPECT_FALSE(harmony.is_end_of_generation(harmony.find_token("<|end|>")));
  EXPECT_TRUE(harmony.is_end_of_generation(harmony.find_token("<|return|>")));
  EXPECT_TRUE(harmony.is_end_of_generation(harmony.find_token("<|call|>")));
  EXPECT_FALSE(harmony.is_end_of_generation(harmony.find_token("<|channel|>")));

  const Tokenizer phi_like = load(test::write_tiny_vocab("end_only", with_controls({"<|end|>", "<|return|>"})));
  EXPECT_TRUE(phi_like.is_end_of_generation(phi_like.find_token("<|end|>")));
  EXPECT_TRUE(phi_like.is_end_of_generation(phi_like.find_token("<|return|>")));
}

TEST(Metadata, BrokenFilesAreErrors) {
  auto unsupported = test::byte_level_spec({"a b"});
  unsupported.model = "t5";
  EXPECT_EQ(load_error(test::write_tiny_vocab("t5", unsupported)), ErrorCode::kUnsupported);

  auto short_types = test::byte_level_spec({"a b"});
  short_types.types = {1, 1, 1};
  EXPECT_EQ(load_error(test::write_tiny_vocab("short_types", short_types)),
            ErrorCode::kInvalidFile);

  auto no_merges = test::byte_level_spec({});
  EXPECT_EQ(load_error(test::write_tiny_vocab("no_merges", no_merges)), ErrorCode::kNotFound);

  auto bad_merge = test::byte_level_spec({"a b"});
  bad_merge.merges = {"nospace"};
  EXPECT_EQ(load_error(test::write_tiny_vocab("bad_merge", bad_merge)), ErrorCode::kInvalidFile);

  test::TinyVocabSpec empty;
  empty.tokens = {};
  empty.model = "llama";
  EXPECT_NE(load_error(test::write_tiny_vocab("empty", empty)), ErrorCode::kInternal);
}

}  // namespace
}  // namespace keel::tokenizer
