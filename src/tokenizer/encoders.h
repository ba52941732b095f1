// The three encoding algorithms, each for one run of plain text (special tokens already
// split out). Internal to the tokenizer module. Thread-safe: they only read the Vocab.
// Precondition for all: text is valid UTF-8.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace keel::tokenizer {

// SPM: text must already have spaces escaped as "▁" (and the space prefix added).
// Merges the highest-scoring adjacent pair first (ties: leftmost); characters that form
// no token fall back to <0xXX> byte tokens, then to the unknown token.
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

// Byte-level BPE: pre-tokenizer split, GPT-2 byte alphabet, then merges by rank inside
// each word (lowest rank first; ties: leftmost). Bytes no token spells are dropped.
void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

// WordPiece: BERT basic split, then greedy longest-prefix match with "##" continuations;
// a word that cannot be covered (or is over 100 characters) becomes the unknown token.
void wordpiece_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

}  // namespace keel::tokenizer
