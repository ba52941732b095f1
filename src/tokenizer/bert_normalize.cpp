#include "tokenizer/bert_normalize.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/bert_tables.h"

namespace keel::tokenizer {

namespace bt = bert_tables;

namespace {

bool in_ranges(const bt::CodePointRange* table, size_t n, char32_t cp) {
  const bt::CodePointRange* end = table + n;
  const auto* it = std::upper_bound(
      table, end, cp, [](char32_t c, const bt::CodePointRange& r) { return c < r.first; });
  return it != table && cp <= (it - 1)->last;
}

bool is_whitespace(char32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' ||
         in_ranges(bt::kSpaceSeparator, bt::kSpaceSeparator_size, cp);
}

// BERT counts all non-alphanumeric ASCII as punctuation, plus Unicode P*.
bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  return in_ranges(bt::kPunctuation, bt::kPunctuation_size, cp);
}

// The CJK Unified Ideographs blocks (not Hangul, Kana): BERT splits each into a word.
bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Appends the fold of cp (lower-case, canonical decomposition, nonspacing marks removed).
void append_folded(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
    return;
  }
  if (cp >= 0xAC00 && cp <= 0xD7A3) {  // Hangul syllable: algorithmic NFD into jamo
    const char32_t s = cp - 0xAC00;
    append_utf8(out, 0x1100 + s / (21 * 28));
    append_utf8(out, 0x1161 + (s % (21 * 28)) / 28);
    if (s % 28 != 0) append_utf8(out, 0x11A7 + s % 28);
    return;
  }
  if (in_ranges(bt::kNonspacingMark, bt::kNonspacingMark_size, cp)) return;
  const auto* s_end = bt::kFoldSingle + bt::kFoldSingle_size;
  const auto* s = std::lower_bound(bt::kFoldSingle, s_end, cp,
                                   [](const bt::FoldSingle& f, char32_t c) { return f.from < c; });
  if (s != s_end && s->from == cp) {
    append_utf8(out, s->to);
    return;
  }
  const auto* m_end = bt::kFoldMulti + bt::kFoldMulti_size;
  const auto* m = std::lower_bound(bt::kFoldMulti, m_end, cp,
                                   [](const bt::FoldMulti& f, char32_t c) { return f.from < c; });
  if (m != m_end && m->from == cp) {
    for (char32_t t : m->to) {
      if (t != 0) append_utf8(out, t);
    }
    return;
  }
  append_utf8(out, cp);
}

}  // namespace

std::vector<std::string> bert_basic_split(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  while (!text.empty()) {
    const Utf8Decoded d = decode_utf8(text);
    text.remove_prefix(d.length);
    const char32_t cp = d.code_point;
    if (cp == 0 || cp == kReplacementChar || in_ranges(bt::kControl, bt::kControl_size, cp)) {
      continue;  // cleaned away, without splitting the word
    }
    if (is_whitespace(cp)) {
      flush();
    } else if (is_punctuation(cp) || is_cjk_ideograph(cp)) {
      flush();
      append_folded(word, cp);
      flush();
    } else {
      // Folding may produce punctuation only in theory (no such Unicode mapping exists),
      // so folding per code point before the split test is equivalent to BERT's order.
      append_folded(word, cp);
    }
  }
  flush();
  return words;
}

}  // namespace keel::tokenizer
