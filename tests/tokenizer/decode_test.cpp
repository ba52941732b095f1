// Decoding: round trips on lossless vocabularies, pieces, and the streaming decoder's
// property (chunks are valid UTF-8; their concatenation equals the full decode).
#include <gtest/gtest.h>

#include <random>

#include "core/utf8.h"
#include "gguf/gguf.h"
#include "shared_vocab.h"
#include "support/paths.h"

namespace keel::tokenizer {
namespace {

// Options the tests use often (all fields named: GCC 12 warns about omitted ones).
const EncodeOptions kNoBos{.add_bos = false, .add_eos = std::nullopt, .parse_special = false};
const DecodeOptions kWholeText{.render_special = false, .strip_space_prefix = true};

using test::reference_vocab;

// Byte-level BPE and SPM with byte fallback lose nothing; WordPiece (bert) does.
class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, DecodeOfEncodeIsIdentity) {
  const Tokenizer& tok = reference_vocab(GetParam());
  // The llama-spm inputs cover every vocabulary's interesting cases (all .inp are equal).
  std::vector<std::string> texts;
  for (const auto& c : test::reference_vectors("llama-spm")) texts.push_back(c.input);
  texts.push_back("tabs\tand\r\nCRLF, emoji 🦙🦙, CJK 我想在, combining e\u0301, NUL-free.");
  for (const std::string& text : texts) {
    const auto ids = tok.encode(text, kNoBos);
    EXPECT_EQ(tok.decode(ids, kWholeText), text) << GetParam();
  }
}

// Random text from a mix of scripts, whitespace runs, digits, marks and emoji.
std::string random_text(std::mt19937& rng) {
  static const char32_t kPool[] = {
      U'a',      U'Z',      U'q',    U' ', U' ',  U'\n',     U'\t',     U'\r',
      U'7',      U'0',      U'\'',   U'!', U'.',  U'<',      U'|',      U'>',
      U'é',      U'ß',      U'Ж',    U'λ', U'我', U'工',     U'가',     U'ア',
      U'\u0301', U'\u200d', U'🦙', U'😁', U'～', U'\u00a0', U'\u3000', U'\U0010FFFD'};
  std::string s;
  const size_t n = rng() % 40;
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 8 == 0) {
      // Any code point of planes 0-3 (surrogates become U+FFFD). Not beyond: starcoder's
      // vocabulary has no token for lead byte 0xF1, so planes 4-7 cannot round-trip there.
      append_utf8(s, static_cast<char32_t>(1 + rng() % 0x3FFFF));
    } else {
      append_utf8(s, kPool[rng() % (sizeof(kPool) / sizeof(kPool[0]))]);
    }
  }
  return s;
}

TEST_P(RoundTrip, RandomTextRoundTrips) {
  const Tokenizer& tok = reference_vocab(GetParam());
  std::mt19937 rng(1234);
  for (int i = 0; i < 300; ++i) {
    const std::string text = random_text(rng);
    const auto ids = tok.encode(text, kNoBos);
    ASSERT_EQ(tok.decode(ids, kWholeText), text) << GetParam() << " case " << i;
  }
}

TEST(Decode, BytesWithoutATokenAreDroppedNotEndOfText) {
  const Tokenizer& tok = reference_vocab("starcoder");  // no token for byte 0xF1
  const auto ids = tok.encode("a\U00063EFCb", kNoBos);
  for (TokenId id : ids) EXPECT_FALSE(tok.is_end_of_generation(id));
  // Its three continuation bytes remain, each decoding as U+FFFD.
  EXPECT_EQ(tok.decode(ids), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b");
}

TEST(Decode, WordPieceRandomTextEncodesToValidIds) {
  const Tokenizer& bert = reference_vocab("bert-bge");
  std::mt19937 rng(99);
  for (int i = 0; i < 300; ++i) {
    for (TokenId id : bert.encode(random_text(rng))) {
      ASSERT_TRUE(id >= 0 && id < bert.vocab_size());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Vocab, RoundTrip,
                         ::testing::Values("llama-spm", "phi-3", "baichuan", "gpt-2",
                                           "deepseek-coder", "deepseek-llm", "starcoder",
                                           "gpt-neox"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

TEST(Decode, GptNeoxAndBaichuanLoadWithTheirDefaults) {
  const Tokenizer& neox = reference_vocab("gpt-neox");
  EXPECT_EQ(neox.kind(), VocabKind::kBpe);
  EXPECT_EQ(neox.pre_tokenizer(), "default");  // no pre key: the GPT-2 split
  EXPECT_EQ(neox.vocab_size(), 50432);
  const Tokenizer& baichuan = reference_vocab("baichuan");
  EXPECT_EQ(baichuan.kind(), VocabKind::kSpm);
  EXPECT_EQ(baichuan.vocab_size(), 64000);
  EXPECT_EQ(baichuan.special_ids().bos, 1);
}

TEST(Decode, PiecesMapBackToBytes) {
  const Tokenizer& spm = reference_vocab("llama-spm");
  EXPECT_EQ(spm.token_to_piece(15043), " Hello");
  EXPECT_EQ(spm.token_text(15043), "\xE2\x96\x81Hello");
  EXPECT_EQ(spm.token_to_piece(spm.find_token("<0x0A>")), "\n");
  EXPECT_EQ(spm.token_to_piece(1), "");
  EXPECT_EQ(spm.token_to_piece(1, /*render_special=*/true), "<s>");

  const Tokenizer& gpt2 = reference_vocab("gpt-2");
  EXPECT_EQ(gpt2.token_to_piece(gpt2.find_token("\xC4\xA0world")), " world");  // "Ġworld"
  EXPECT_EQ(gpt2.token_to_piece(gpt2.find_token("\xC4\x8A")), "\n");           // "Ċ"

  const Tokenizer& bert = reference_vocab("bert-bge");
  EXPECT_EQ(bert.decode(bert.encode("Hello, world!"), kWholeText), "hello , world !");
}

TEST(Decode, ContinuationKeepsItsLeadingSpace) {
  const Tokenizer& spm = reference_vocab("llama-spm");
  // A generated continuation's first token is " world": its space is real.
  EXPECT_EQ(spm.decode({3186}), " world");
  EXPECT_EQ(spm.decode({3186}, kWholeText), "world");
  EXPECT_EQ(spm.decode({1, 15043}, kWholeText), "Hello");
}

TEST(Decode, SplitCharacterIsHeldThenCompleted) {
  const Tokenizer& spm = reference_vocab("llama-spm");
  const TokenId e2 = spm.find_token("<0xE2>"), x82 = spm.find_token("<0x82>"),
                xac = spm.find_token("<0xAC>");
  StreamDecoder d(spm);
  EXPECT_EQ(d.push(e2), "");
  EXPECT_EQ(d.push(x82), "");
  EXPECT_EQ(d.pending_bytes(), 2u);
  EXPECT_EQ(d.push(xac), "\xE2\x82\xAC");  // "€"
  EXPECT_EQ(d.finish(), "");
  // Never completed: U+FFFD at the end, and the same in the full decode.
  EXPECT_EQ(d.push(e2), "");
  EXPECT_EQ(d.finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(spm.decode({e2}), "\xEF\xBF\xBD");
  // Interrupted by another character: replaced immediately, the rest flows.
  EXPECT_EQ(d.push(e2), "");
  EXPECT_EQ(d.push(15043), "\xEF\xBF\xBD Hello");
}

TEST(Decode, StreamDecoderSurvivesMovingItsTokenizer) {
  Tokenizer original =
      Tokenizer::from_gguf(gguf::GgufFile(test::reference_path("stories260K", "model.gguf")));
  StreamDecoder d(original);
  EXPECT_EQ(d.push(403), " Once");
  const Tokenizer moved = std::move(original);
  EXPECT_EQ(d.push(407), " upon");
  EXPECT_EQ(moved.decode({403, 407}), " Once upon");
}

// Random token sequences, biased towards byte tokens and multi-byte pieces so that
// characters are split across tokens, invalid, or left incomplete.
void check_stream_property(const Tokenizer& tok, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<TokenId> byte_like;
  for (int b = 0x80; b < 0x100; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    const TokenId id = tok.find_token(name);
    if (id != kNoToken) byte_like.push_back(id);
  }
  for (TokenId id = 0; id < tok.vocab_size() && byte_like.size() < 600; id += 7) {
    const std::string p = tok.token_to_piece(id);
    if (!is_valid_utf8(p)) byte_like.push_back(id);  // BPE pieces holding partial characters
  }
  ASSERT_FALSE(byte_like.empty());
  std::uniform_int_distribution<TokenId> any(0, tok.vocab_size() - 1);
  std::uniform_int_distribution<size_t> pick(0, byte_like.size() - 1);
  for (int round = 0; round < 200; ++round) {
    std::vector<TokenId> ids(rng() % 24);
    for (TokenId& id : ids) id = rng() % 3 == 0 ? any(rng) : byte_like[pick(rng)];
    const DecodeOptions opts{.render_special = rng() % 2 == 0,
                             .strip_space_prefix = rng() % 2 == 0};
    StreamDecoder d(tok, opts);
    std::string streamed;
    for (TokenId id : ids) {
      const std::string chunk = d.push(id);
      ASSERT_TRUE(is_valid_utf8(chunk));
      streamed += chunk;
    }
    const std::string tail = d.finish();
    ASSERT_TRUE(is_valid_utf8(tail));
    streamed += tail;
    ASSERT_EQ(streamed, tok.decode(ids, opts)) << "seed " << seed << " round " << round;
  }
}

TEST(Decode, StreamEqualsFullDecodeSpm) { check_stream_property(reference_vocab("llama-spm"), 1); }
TEST(Decode, StreamEqualsFullDecodeBpe) { check_stream_property(reference_vocab("gpt-2"), 2); }
TEST(Decode, StreamEqualsFullDecodeStories) { check_stream_property(test::stories_vocab(), 3); }

}  // namespace
}  // namespace keel::tokenizer
