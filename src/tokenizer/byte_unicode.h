// The GPT-2 byte-level alphabet: each byte 0..255 stands for one printable code point so
// that byte-level BPE vocabularies are text. Printable Latin-1 bytes ('!'..'~',
// '¡'..'¬', '®'..'ÿ') map to themselves; the other 68 bytes map to U+0100.. in byte order
// (so ' ' is 'Ġ', '\n' is 'Ċ'). Internal to the tokenizer module. Thread-safe (constant).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace keel::tokenizer {

// UTF-8 of the code point standing for byte b.
const std::string& byte_to_unicode(uint8_t b);
// The byte a code point stands for, or -1 when it is not in the alphabet.
int unicode_to_byte(char32_t cp);

// Text bytes -> the alphabet's UTF-8.
std::string bytes_to_unicode_text(std::string_view bytes);
// The alphabet's UTF-8 -> bytes; code points outside the alphabet are kept as UTF-8.
std::string unicode_text_to_bytes(std::string_view text);

}  // namespace keel::tokenizer
