// Tokenizer — text <-> token ids for a GGUF model's vocabulary.
//
// Supported `tokenizer.ggml.model` values:
//   "llama"  SentencePiece-style (SPM): score-ordered merges over characters, "▁" for
//            spaces, an optional leading-space prefix, byte fallback to <0xXX> tokens.
//   "gpt2"   byte-level BPE: a pre-tokenizer regex split chosen by `tokenizer.ggml.pre`,
//            then merges by rank over the GPT-2 byte->unicode alphabet. An unknown `pre`
//            logs a warning and uses the GPT-2 split (never an error).
//   "bert"   WordPiece: BERT's basic tokenizer (clean, lower-case, strip accents, split
//            punctuation and CJK) then greedy longest-match with "##" continuations.
// Any other model, or inconsistent metadata (array lengths, ids out of range), throws
// keel::Error(kUnsupported / kInvalidFile) from from_gguf naming the key and the reason.
//
// Special tokens: control tokens (and the unknown token) are matched in input text only
// when EncodeOptions::parse_special is set; user-defined tokens are always matched as
// whole tokens, as the models' own tokenizers do. Decoding renders control tokens as
// nothing unless DecodeOptions::render_special.
//
// Text out is always valid UTF-8: decode() replaces every invalid or incomplete byte
// sequence with U+FFFD; StreamDecoder emits only complete characters and holds the rest.
//
// Thread-safety: a Tokenizer is immutable after from_gguf; every const method may be
// called from any number of threads at once. A StreamDecoder is single-threaded state
// for one sequence; it refers to its Tokenizer's tables, which must outlive it (moving
// the Tokenizer keeps them valid; a moved-from Tokenizer may only be assigned or destroyed).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::gguf {
class GgufFile;
}

namespace keel::tokenizer {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;  // an unset special id (GGUF's 0xFFFFFFFF)

// GGUF `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

enum class VocabKind { kSpm, kBpe, kWordPiece };

struct SpecialIds {
  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId eot = kNoToken;
  TokenId eom = kNoToken;
  TokenId unk = kNoToken;
  TokenId sep = kNoToken;
  TokenId pad = kNoToken;
  TokenId cls = kNoToken;
  TokenId mask = kNoToken;
};

struct EncodeOptions {
  std::optional<bool> add_bos;  // unset: the vocabulary's default (add_bos_token)
  std::optional<bool> add_eos;  // unset: the vocabulary's default (add_eos_token)
  bool parse_special = false;   // match control-token text ("<|im_end|>") in the input
};

struct DecodeOptions {
  bool render_special = false;  // control/unknown tokens as their text instead of nothing
  // Remove the space the SPM encoder prefixes to text (add_space_prefix) from the first
  // rendered normal token. Set it when decoding a whole encoded text; leave it off for a
  // continuation, whose first token's space is real.
  bool strip_space_prefix = false;
};

class Vocab;  // internal (vocab.h)

class Tokenizer {
 public:
  // Reads the tokenizer.ggml.* metadata. The Tokenizer copies what it needs; the file
  // may be closed afterwards.
  static Tokenizer from_gguf(const gguf::GgufFile& file);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  VocabKind kind() const;
  const std::string& pre_tokenizer() const;  // the `pre` in effect ("gpt-2", "llama3"...)
  int32_t vocab_size() const;
  const SpecialIds& special_ids() const;
  bool add_bos_default() const;
  bool add_eos_default() const;
  bool add_space_prefix() const;

  // Throws keel::Error(kInvalidArgument) when the text is not valid UTF-8.
  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;

  // The token's text as stored in the vocabulary ("▁Hello", "Ġworld", "<0x0A>").
  // Throws keel::Error(kInvalidArgument) for an id outside [0, vocab_size()).
  const std::string& token_text(TokenId id) const;
  TokenType token_type(TokenId id) const;
  // Id of the token whose stored text is exactly `text`, or kNoToken.
  TokenId find_token(std::string_view text) const;

  // The bytes this token stands for (may be part of a UTF-8 character: byte tokens,
  // byte-level BPE pieces). Control tokens give "" unless render_special. Throws
  // keel::Error(kInvalidArgument) for an out-of-range id.
  std::string token_to_piece(TokenId id, bool render_special = false) const;

  // Concatenated pieces as valid UTF-8 (invalid/incomplete sequences become U+FFFD).
  std::string decode(const std::vector<TokenId>& ids, const DecodeOptions& options = {}) const;

  // True for tokens that end generation: eos, eot, eom, and control tokens with a known
  // end-of-turn name (<|eot_id|>, <|im_end|>, <end_of_turn>, <|end|>, <|return|>, ...).
  bool is_end_of_generation(TokenId id) const;
  const std::vector<TokenId>& end_of_generation_ids() const;

 private:
  explicit Tokenizer(std::unique_ptr<const Vocab> vocab);
  friend class StreamDecoder;
  std::unique_ptr<const Vocab> vocab_;
};

// Incremental detokenizer for one generated sequence. push() returns only complete UTF-8
// text; bytes of a character not yet complete are held until a later token completes it.
// Bytes that can never become valid are replaced by U+FFFD as soon as that is certain.
// The concatenation of all push() results and finish() equals
// tokenizer.decode(all ids, options).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, DecodeOptions options = {});

  std::string push(TokenId id);  // throws keel::Error(kInvalidArgument) for a bad id
  // Flushes held bytes (each incomplete sequence as U+FFFD) and resets for a new sequence.
  std::string finish();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Vocab* vocab_;
  DecodeOptions options_;
  bool at_start_ = true;
  std::string pending_;
};

}  // namespace keel::tokenizer
