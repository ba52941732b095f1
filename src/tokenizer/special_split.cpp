#include "tokenizer/special_split.h"

namespace keel::tokenizer {

namespace {

// The longest allowed special token whose text starts text[pos], or kNoToken.
TokenId match_at(const Vocab& v, std::string_view text, size_t pos, bool parse_special) {
  for (TokenId id : v.specials_by_first_byte[static_cast<uint8_t>(text[pos])]) {
    if (!parse_special && v.types[id] != TokenType::kUserDefined) continue;
    const std::string& t = v.tokens[id];
    if (text.compare(pos, t.size(), t) == 0) return id;  // lists are longest first
  }
  return kNoToken;
}

}  // namespace

std::vector<Fragment> split_specials(const Vocab& vocab, std::string_view text,
                                     bool parse_special) {
  std::vector<Fragment> out;
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const TokenId id = match_at(vocab, text, pos, parse_special);
    if (id == kNoToken) {
      ++pos;
      continue;
    }
    if (pos > plain_start) out.push_back({kNoToken, text.substr(plain_start, pos - plain_start)});
    out.push_back({id, {}});
    pos += vocab.tokens[id].size();
    plain_start = pos;
  }
  if (plain_start < text.size()) out.push_back({kNoToken, text.substr(plain_start)});
  return out;
}

}  // namespace keel::tokenizer
