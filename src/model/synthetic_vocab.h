// Internal to the synthetic model generator (synthetic.h): the tokenizer section of a
// synthetic model, built in or copied from another GGUF. Pure functions; errors throw
// keel::Error naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"

namespace keel::model::synthetic {

using Metadata = std::vector<std::pair<std::string, gguf::Value>>;

// Byte-level BPE ("gpt2"): 256 byte tokens, a few English merges, <s> and </s>, padded
// with unused tokens to `pad_to` when that is larger.
Metadata builtin_vocab(int64_t pad_to);
// Size of builtin_vocab(0): the smallest vocabulary the built-in tokenizer allows.
int64_t builtin_vocab_size();
// Every tokenizer.* key of the GGUF at `path`.
Metadata copied_vocab(const std::string& path);
// Number of entries in tokenizer.ggml.tokens (0 if absent).
int64_t vocab_size(const Metadata& m);

}  // namespace keel::model::synthetic
