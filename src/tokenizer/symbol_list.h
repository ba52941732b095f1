// A word as a doubly linked list of text runs, the working state of SPM and BPE merging.
// Internal to the tokenizer module.
#pragma once

#include <string_view>
#include <vector>

namespace keel::tokenizer {

struct TextSymbol {
  size_t begin;  // byte offset in the text
  size_t len;    // 0 once merged into its left neighbour
  int prev;      // -1 at the ends
  int next;
};

// One symbol per UTF-8 character of text (valid UTF-8), linked in order.
std::vector<TextSymbol> split_characters(std::string_view text);

// Merges symbols[left].next into symbols[left] and unlinks it.
void merge_with_next(std::vector<TextSymbol>& symbols, int left);

}  // namespace keel::tokenizer
