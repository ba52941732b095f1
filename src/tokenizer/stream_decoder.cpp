#include "core/utf8.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace keel::tokenizer {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(&tokenizer), options_(options) {}

std::string StreamDecoder::push(TokenId id) {
  std::string piece = tokenizer_->token_to_piece(id, options_.render_special);
  const Vocab& v = *tokenizer_->vocab_;
  const TokenType t = v.types[id];
  if (t != TokenType::kControl && t != TokenType::kUnknown) {
    // The first text-bearing token may carry the encoder's space prefix.
    if (at_start_ && options_.strip_space_prefix && v.strip_first_space && !piece.empty() &&
        piece[0] == ' ') {
      piece.erase(0, 1);
    }
    at_start_ = false;
  }
  pending_ += piece;
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
