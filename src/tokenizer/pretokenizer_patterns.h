// The split regexes of each known `tokenizer.ggml.pre` value (facts from the models'
// tokenizer.json files, as adopted by llama.cpp's converter). Internal.
#pragma once

#include <string>
#include <vector>

namespace keel::tokenizer {

struct PreTokenizerPatterns {
  std::vector<std::string> names;     // every `pre` value that selects this set
  std::vector<std::string> patterns;  // applied in order
  // Llama 3 and Tekken: a word that is itself a token is emitted whole, without merges.
  bool ignore_merges = false;
};

const std::vector<PreTokenizerPatterns>& known_pre_tokenizers();

}  // namespace keel::tokenizer
