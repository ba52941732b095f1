#include "tokenizer/byte_unicode.h"

#include <array>

#include "core/utf8.h"

namespace keel::tokenizer {

namespace {

bool is_self_mapped(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> to_text;
  std::array<int, 512> from_cp;  // every mapped code point is below U+0200
  Tables() {
    from_cp.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp =
          is_self_mapped(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      append_utf8(to_text[b], cp);
      from_cp[cp] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_text[b]; }

int unicode_to_byte(char32_t cp) { return cp < 512 ? tables().from_cp[cp] : -1; }

std::string bytes_to_unicode_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_to_unicode(static_cast<uint8_t>(c));
  return out;
}

std::string unicode_text_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const Utf8Decoded d = decode_utf8(text);
    const int b = d.valid ? unicode_to_byte(d.code_point) : -1;
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text.data(), d.length);
    }
    text.remove_prefix(d.length);
  }
  return out;
}

}  // namespace keel::tokenizer
