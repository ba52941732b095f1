#include "tokenizer/symbol_list.h"

#include <algorithm>

#include "core/utf8.h"

namespace keel::tokenizer {

std::vector<TextSymbol> split_characters(std::string_view text) {
  std::vector<TextSymbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min(utf8_char_length(text[pos]), text.size() - pos);
    const int idx = static_cast<int>(symbols.size());
    symbols.push_back({pos, n, idx - 1, pos + n == text.size() ? -1 : idx + 1});
    pos += n;
  }
  return symbols;
}

void merge_with_next(std::vector<TextSymbol>& symbols, int left) {
  TextSymbol& l = symbols[left];
  TextSymbol& r = symbols[l.next];
  l.len += r.len;
  r.len = 0;
  l.next = r.next;
  if (r.next >= 0) symbols[r.next].prev = left;
}

}  // namespace keel::tokenizer
