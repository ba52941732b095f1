// Vocab — the tokenizer's immutable tables, read from GGUF `tokenizer.ggml.*` metadata.
// Internal to the tokenizer module; the public face is Tokenizer (tokenizer.h).
//
// Owns every string; the lookup maps hold views into `tokens`, so a Vocab is neither
// copyable nor movable (it lives behind a unique_ptr). Thread-safe for concurrent reads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace keel::gguf {
class GgufFile;
}

namespace keel::tokenizer {

// Heterogeneous lookup so string_view keys need no allocation.
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Merge {
  int32_t rank;
  TokenId result;
};

class Vocab {
 public:
  static std::unique_ptr<const Vocab> load(const gguf::GgufFile& file);

  Vocab() = default;
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;

  TokenId find(std::string_view text) const {
    auto it = text_to_id.find(text);
    return it == text_to_id.end() ? kNoToken : it->second;
  }
  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool valid_id(TokenId id) const { return id >= 0 && id < size(); }
  // Throws keel::Error(kInvalidArgument) naming the id when it is out of range.
  void check_id(TokenId id) const;
  // Decoding (decode.cpp): one token's bytes, and appending them under the options'
  // space-prefix rule (at_start: no text-bearing token seen yet).
  std::string piece(TokenId id, bool render_special) const;
  void append_piece(TokenId id, const DecodeOptions& options, bool& at_start,
                    std::string& out) const;
  // BPE: the merge of two adjacent tokens, if the vocabulary has one.
  std::optional<Merge> find_merge(TokenId left, TokenId right) const {
    auto it = merges.find((static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
                          static_cast<uint32_t>(right));
    if (it == merges.end()) return std::nullopt;
    return it->second;
  }

  VocabKind kind = VocabKind::kSpm;
  std::string pre_name;             // the `pre` in effect
  std::vector<std::string> tokens;  // [n_vocab] stored text
  std::vector<float> scores;        // [n_vocab] SPM merge priority (higher first)
  std::vector<TokenType> types;     // [n_vocab]
  std::unordered_map<std::string_view, TokenId, ViewHash, std::equal_to<>> text_to_id;
  std::unordered_map<uint64_t, Merge> merges;  // (left << 32 | right) -> merge
  std::optional<PreTokenizer> pre;             // BPE only
  // WordPiece spelling: GGUF converters store word-initial pieces as "▁hello" and
  // continuations bare ("llo"); Hugging Face's own form is "hello" / "##llo".
  std::string wp_word_prefix;
  std::string wp_continuation_prefix;

  SpecialIds special;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;   // SPM: prefix text with a space ("▁") before encoding
  bool strip_first_space = false;  // decoding may drop the first piece's leading space

  // SPM byte fallback: the token for each byte (<0xXX>), or kNoToken.
  std::array<TokenId, 256> byte_tokens{};
  // Tokens matched whole in input text, longest first within each first byte.
  std::array<std::vector<TokenId>, 256> specials_by_first_byte;
  std::vector<std::string> pieces;      // [n_vocab] decoded bytes of each token (normal rendering)
  std::vector<bool> end_of_generation;  // [n_vocab]
  std::vector<TokenId> eog_ids;
};

// Types whose text is part of the ordinary vocabulary (SPM merges may form them).
inline bool is_ordinary(TokenType t) {
  return t == TokenType::kNormal || t == TokenType::kUndefined || t == TokenType::kUserDefined;
}

}  // namespace keel::tokenizer
