#include "core/utf8.h"

namespace keel {

namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Sequence length announced by a lead byte; 0 for bytes that cannot start a sequence
// (continuations, C0/C1 overlong leads, F5..FF).
size_t lead_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// The second byte's allowed range depends on the lead: this is what rules out overlong
// forms, surrogates and values above U+10FFFF.
bool second_byte_ok(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0:
      return b >= 0xA0 && b <= 0xBF;
    case 0xED:
      return b >= 0x80 && b <= 0x9F;
    case 0xF0:
      return b >= 0x90 && b <= 0xBF;
    case 0xF4:
      return b >= 0x80 && b <= 0x8F;
    default:
      return is_continuation(b);
  }
}

// How many bytes of s (from the front, at most the announced length) form a valid prefix
// of a sequence. Equal to the announced length when the sequence is complete.
size_t valid_prefix(std::string_view s, size_t need) {
  const auto lead = static_cast<uint8_t>(s[0]);
  size_t i = 1;
  while (i < need && i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (i == 1 ? !second_byte_ok(lead, b) : !is_continuation(b)) break;
    ++i;
  }
  return i;
}

}  // namespace

Utf8Decoded decode_utf8(std::string_view s) {
  const auto lead = static_cast<uint8_t>(s[0]);
  const size_t need = lead_length(lead);
  if (need == 1) return {lead, 1, true};
  if (need == 0) return {kReplacementChar, 1, false};
  const size_t have = valid_prefix(s, need);
  if (have < need) return {kReplacementChar, have, false};
  char32_t cp = lead & (0x7F >> need);
  for (size_t i = 1; i < need; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[i]) & 0x3F);
  return {cp, need, true};
}

void append_utf8(std::string& out, char32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    const Utf8Decoded d = decode_utf8(s);
    if (!d.valid) return false;
    s.remove_prefix(d.length);
  }
  return true;
}

size_t utf8_incomplete_tail(std::string_view s) {
  // A lead byte can be at most 3 bytes before the end of an incomplete sequence.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(s[n - back]);
    if (is_continuation(b)) continue;
    const size_t need = lead_length(b);
    if (need <= back) return 0;  // ASCII, an invalid byte, or a complete sequence
    return valid_prefix(s.substr(n - back), need) == back ? back : 0;
  }
  return 0;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const Utf8Decoded d = decode_utf8(s);
    if (d.valid) {
      out.append(s.data(), d.length);
    } else {
      append_utf8(out, kReplacementChar);
    }
    s.remove_prefix(d.length);
  }
  return out;
}

}  // namespace keel
