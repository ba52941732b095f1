// BERT's basic tokenizer (the part before WordPiece): clean the text, lower-case and strip
// accents, split on whitespace, punctuation and CJK ideographs. Behaves as the uncased
// BERT tokenizers on Hugging Face do (BertNormalizer + BertPreTokenizer).
// Internal to the tokenizer module. Thread-safe (pure).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace keel::tokenizer {

// Precondition: text is valid UTF-8. Returns the words, each normalized, in order.
std::vector<std::string> bert_basic_split(std::string_view text);

}  // namespace keel::tokenizer
