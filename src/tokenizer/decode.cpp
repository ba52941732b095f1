// Token ids -> text: pieces, whole decode, and the streaming decoder.
#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace keel::tokenizer {

void Vocab::check_id(TokenId id) const {
  if (!valid_id(id)) {
    throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) +
                                                 " is outside the vocabulary (0.." +
                                                 std::to_string(size() - 1) + ")");
  }
}

std::string Vocab::piece(TokenId id, bool render_special) const {
  check_id(id);
  const TokenType t = types[id];
  if (render_special && (t == TokenType::kControl || t == TokenType::kUnknown)) return tokens[id];
  return pieces[id];
}

void Vocab::append_piece(TokenId id, const DecodeOptions& options, bool& at_start,
                         std::string& out) const {
  std::string p = piece(id, options.render_special);
  const TokenType t = types[id];
  if (t != TokenType::kControl && t != TokenType::kUnknown) {
    // The first text-bearing token may carry the encoder's space prefix.
    if (at_start && options.strip_space_prefix && strip_first_space && !p.empty() && p[0] == ' ') {
      p.erase(0, 1);
    }
    at_start = false;
  }
  out += p;
}

std::string Tokenizer::token_to_piece(TokenId id, bool render_special) const {
  return vocab_->piece(id, render_special);
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, const DecodeOptions& options) const {
  // All bytes first, then one sanitizing pass: StreamDecoder must produce the same text
  // piecewise (the streaming tests use this as their oracle).
  std::string bytes;
  bool at_start = true;
  for (TokenId id : ids) vocab_->append_piece(id, options, at_start, bytes);
  return sanitize_utf8(bytes);
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, DecodeOptions options)
    : vocab_(tokenizer.vocab_.get()), options_(options) {}

std::string StreamDecoder::push(TokenId id) {
  vocab_->append_piece(id, options_, at_start_, pending_);
  // Everything before an incomplete trailing character is final: emit it, with bytes
  // that can never become valid replaced now.
  const size_t keep = utf8_incomplete_tail(pending_);
  std::string out = sanitize_utf8(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = sanitize_utf8(pending_);
  pending_.clear();
  at_start_ = true;
  return out;
}

}  // namespace keel::tokenizer
