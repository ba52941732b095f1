#include "core/utf8.h"
#include "tokenizer/tokenizer.h"

namespace keel::tokenizer {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(&tokenizer), options_(options) {}

std::string StreamDecoder::push(TokenId id) {
  tokenizer_->append_piece(id, options_, at_start_, pending_);
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
