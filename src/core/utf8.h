// UTF-8 helpers: validation, code point decode/encode, and the length of an incomplete
// trailing sequence (for streaming text that may be cut inside a character).
//
// Validity follows RFC 3629 / Unicode: no overlong forms, no surrogates (U+D800..DFFF),
// nothing above U+10FFFF. Malformed input is replaced, never trusted: decode_utf8 reports
// the length of the maximal invalid subpart so callers substitute one U+FFFD per subpart
// (the Unicode "best practice" rule), which makes sanitizing a byte stream piecewise give
// the same text as sanitizing it whole when it is cut only at character boundaries.
//
// Thread-safety: pure functions; no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keel {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Result of decoding one code point at the front of a byte string.
struct Utf8Decoded {
  char32_t code_point = kReplacementChar;  // kReplacementChar when !valid
  size_t length = 0;  // bytes consumed: the sequence, or the maximal invalid subpart (>= 1)
  bool valid = false;
};

// Decodes the code point starting at s[0]. Precondition: !s.empty().
Utf8Decoded decode_utf8(std::string_view s);

// Length of the character starting with lead byte `lead` in valid UTF-8 (1..4).
inline size_t utf8_char_length(char lead) {
  const auto b = static_cast<uint8_t>(lead);
  return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

// Appends the UTF-8 encoding of cp; a surrogate or a value above U+10FFFF appends U+FFFD.
void append_utf8(std::string& out, char32_t cp);

bool is_valid_utf8(std::string_view s);

// Number of bytes at the end of s that begin a valid multi-byte sequence which is not yet
// complete (0..3). Such a tail may still become valid when more bytes arrive.
size_t utf8_incomplete_tail(std::string_view s);

// s with every maximal invalid subpart (including an incomplete tail) replaced by U+FFFD.
std::string sanitize_utf8(std::string_view s);

}  // namespace keel
