// Vocabularies the tokenizer tests share: each GGUF is loaded once per test process
// (the big ones take a noticeable fraction of a second).
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace keel::test {

// ../shared/reference/vocab/ggml-vocab-<name>.gguf, loaded on first use.
const tokenizer::Tokenizer& reference_vocab(const std::string& name);
// ../shared/models/stories260K.gguf.
const tokenizer::Tokenizer& stories_vocab();

struct VocabCase {
  std::string input;
  std::vector<tokenizer::TokenId> expected;
};
// The .inp/.out vectors for a vocabulary (README §Tokenizer vectors).
std::vector<VocabCase> reference_vectors(const std::string& name);

}  // namespace keel::test
