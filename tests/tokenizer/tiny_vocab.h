// Small hand-made vocabularies written as GGUF files, for cases the reference
// vocabularies do not cover (unknown pre-tokenizer, broken metadata, unset ids).
#pragma once

#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace keel::test {

struct TinyVocabSpec {
  std::string model = "gpt2";
  std::string pre = "gpt-2";  // empty: no pre key
  std::vector<std::string> tokens;
  std::vector<int32_t> types;   // empty: all normal
  std::vector<float> scores;    // empty: no scores key
  std::vector<std::string> merges;
  std::vector<std::pair<std::string, gguf::Value>> extra;  // more tokenizer.ggml.* keys
};

// Writes the spec to a fresh file in the test temp dir and returns its path.
std::string write_tiny_vocab(const std::string& name, const TinyVocabSpec& spec);

// A byte-level BPE vocabulary: the 256 byte characters plus the given merges' results.
TinyVocabSpec byte_level_spec(const std::vector<std::string>& merges);

}  // namespace keel::test
