// Tables derived from a loaded vocabulary: byte fallback ids, the special-token matcher
// index, each token's decoded piece, and the end-of-generation set.
#include <algorithm>
#include <string_view>

#include "core/utf8.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/vocab.h"

namespace keel::tokenizer {

namespace {

// Names chat templates use to end a turn or a response.
const char* const kEndOfTurnNames[] = {
    "<|eot_id|>",      "<|im_end|>",    "<|end|>",       "<|return|>",
    "<|call|>",        "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<|end_of_text|>", "<EOT>",         "_<EOT>",        "<｜end▁of▁sentence｜>",
    "<|end_of_turn|>",
};

// "<0x41>" -> 0x41; -1 when the text is not a byte token's.
int parse_byte_token(const std::string& text) {
  if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return -1;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = text[i];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                         : -1;
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string_view::npos; pos = hit + from.size()) {
    out.append(s.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(s.substr(pos));
  return out;
}

// The bytes a token stands for under normal rendering (control tokens: nothing).
std::string normal_piece(const Vocab& v, TokenId id) {
  const std::string& text = v.tokens[id];
  switch (v.types[id]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
      return {};
    case TokenType::kUserDefined:
      return text;  // added tokens are stored as plain text in every vocabulary kind
    case TokenType::kByte: {
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : text;
    }
    default:
      break;
  }
  switch (v.kind) {
    case VocabKind::kSpm:
      return replace_all(text, "\xE2\x96\x81", " ");  // "▁" -> " "
    case VocabKind::kBpe:
      return unicode_text_to_bytes(text);
    case VocabKind::kWordPiece: {
      // Word-initial pieces start with a space; continuations join the previous piece.
      const std::string& wp = v.wp_word_prefix;
      const std::string& cp = v.wp_continuation_prefix;
      const bool starts_word =
          wp.empty() ? text.compare(0, cp.size(), cp) != 0 : text.compare(0, wp.size(), wp) == 0;
      const size_t skip = starts_word ? wp.size() : cp.size();
      std::string piece = starts_word ? std::string(1, ' ') : std::string();
      piece.append(text, skip, std::string::npos);
      return piece;
    }
  }
  return text;
}

void build_byte_tokens(Vocab& v) {
  v.byte_tokens.fill(kNoToken);
  for (TokenId id = 0; id < v.size(); ++id) {
    if (v.types[id] != TokenType::kByte) continue;
    const int b = parse_byte_token(v.tokens[id]);
    if (b >= 0 && v.byte_tokens[b] == kNoToken) v.byte_tokens[b] = id;
  }
  for (int b = 0; b < 128; ++b) {  // vocabularies without <0xXX> may hold ASCII directly
    if (v.byte_tokens[b] == kNoToken)
      v.byte_tokens[b] = v.find(std::string(1, static_cast<char>(b)));
  }
}

void build_special_index(Vocab& v) {
  for (TokenId id = 0; id < v.size(); ++id) {
    const TokenType t = v.types[id];
    const bool special =
        t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
    // Invalid UTF-8 could match inside a character and cut the text there.
    if (!special || v.tokens[id].empty() || !is_valid_utf8(v.tokens[id])) continue;
    v.specials_by_first_byte[static_cast<uint8_t>(v.tokens[id][0])].push_back(id);
  }
  for (auto& list : v.specials_by_first_byte) {
    std::stable_sort(list.begin(), list.end(),
                     [&](TokenId a, TokenId b) { return v.tokens[a].size() > v.tokens[b].size(); });
  }
}

void build_end_of_generation(Vocab& v) {
  v.end_of_generation.assign(v.tokens.size(), false);
  for (TokenId id : {v.special.eos, v.special.eot, v.special.eom}) {
    if (v.valid_id(id)) v.end_of_generation[id] = true;
  }
  auto special = [&](const char* name) {
    const TokenId id = v.find(name);
    if (id == kNoToken) return kNoToken;
    const TokenType t = v.types[id];
    return t == TokenType::kControl || t == TokenType::kUserDefined ? id : kNoToken;
  };
  // OpenAI harmony (gpt-oss): <|end|> closes one message (the analysis channel's, say) and
  // the reply goes on; <|return|> and <|call|> end it. A vocabulary holding both of those
  // is harmony's, as llama.cpp decides too.
  const bool harmony = special("<|return|>") != kNoToken && special("<|call|>") != kNoToken;
  for (const char* name : kEndOfTurnNames) {
    if (harmony && std::string_view(name) == "<|end|>") continue;
    const TokenId id = special(name);
    if (id != kNoToken) v.end_of_generation[id] = true;
  }
  for (TokenId id = 0; id < v.size(); ++id) {
    if (v.end_of_generation[id]) v.eog_ids.push_back(id);
  }
}

}  // namespace

void derive_tables(Vocab& v) {
  build_byte_tokens(v);
  build_special_index(v);
  v.pieces.resize(v.tokens.size());
  for (TokenId id = 0; id < v.size(); ++id) v.pieces[id] = normal_piece(v, id);
  build_end_of_generation(v);
}

}  // namespace keel::tokenizer
