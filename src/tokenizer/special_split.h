// Splitting input text at special-token text before the encoders run. Internal.
// User-defined tokens are always matched; control and unknown tokens only when
// parse_special. At each position the longest matching token wins (leftmost-longest).
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace keel::tokenizer {

struct Fragment {
  TokenId token = kNoToken;  // a matched special token, or kNoToken for plain text
  std::string_view text;     // the plain text (a view into the input) when token == kNoToken
};

std::vector<Fragment> split_specials(const Vocab& vocab, std::string_view text, bool parse_special);

}  // namespace keel::tokenizer
