#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/bert_normalize.h"
#include "tokenizer/encoders.h"

namespace keel::tokenizer {

namespace {

constexpr size_t kMaxWordChars = 100;  // BERT's max_input_chars_per_word

size_t count_chars(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += utf8_char_length(s[i])) ++n;
  return n;
}

// Greedy longest-prefix match; appends nothing and returns false when the word cannot be
// covered by vocabulary pieces.
bool match_word(const Vocab& vocab, std::string_view word, std::vector<TokenId>& out) {
  const size_t mark = out.size();
  std::string candidate;
  size_t start = 0;
  while (start < word.size()) {
    const std::string& prefix = start == 0 ? vocab.wp_word_prefix : vocab.wp_continuation_prefix;
    TokenId found = kNoToken;
    // Try the longest remaining prefix first, shrinking one character at a time.
    size_t end = word.size();
    for (; end > start; --end) {
      // Pieces end at character boundaries only.
      if (end < word.size() && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80) continue;
      candidate.resize(prefix.size() + (end - start));
      std::copy(prefix.begin(), prefix.end(), candidate.begin());
      std::copy(word.begin() + start, word.begin() + end, candidate.begin() + prefix.size());
      found = vocab.find(candidate);
      if (found != kNoToken) break;
    }
    if (found == kNoToken) {
      out.resize(mark);
      return false;
    }
    out.push_back(found);
    start = end;
  }
  return true;
}

}  // namespace

void wordpiece_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  for (const std::string& word : bert_basic_split(text)) {
    if (count_chars(word) <= kMaxWordChars && match_word(vocab, word, out)) continue;
    if (vocab.special.unk != kNoToken) out.push_back(vocab.special.unk);
  }
}

}  // namespace keel::tokenizer
