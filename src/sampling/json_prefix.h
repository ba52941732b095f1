// JsonPrefix — an incremental check that a byte string is a prefix of a JSON text
// (RFC 8259), for constrained decoding (sampling/json_constraint.h).
//
// Contract:
//  - feed(bytes) consumes bytes in order and returns false at the first byte that no
//    valid JSON text could continue with; the state is then unspecified (feed a copy when
//    probing: the state is a small value type, cheap to copy).
//  - complete() is true once one whole top-level value has been read (trailing whitespace
//    may follow; nothing else). A number at the top level never completes (its end is only
//    known from the next byte): with Options::object_only, the mode used, the top level is
//    an object.
//  - Strings must be valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF)
//    and have no raw control characters; escapes are JSON's (\u needs 4 hex digits).
//  - Limits, so a runaway model cannot grow the state or pad forever: nesting depth <=
//    kMaxDepth, and whitespace between tokens (outside strings) at most one line break
//    (\n, \r\n) and kMaxIndent spaces or tabs per run — enough for pretty-printed JSON
//    (llama.cpp's JSON grammar draws the same line).
//  - Not thread-safe; a plain value.
#pragma once

#include <cstdint>
#include <string_view>

namespace keel::sampling {

class JsonPrefix {
 public:
  static constexpr int kMaxDepth = 64;
  static constexpr int kMaxIndent = 20;

  struct Options {
    bool object_only = true;  // the top-level value must be an object
  };

  JsonPrefix() : JsonPrefix(Options{}) {}
  explicit JsonPrefix(const Options& options);

  bool feed(std::string_view bytes);
  bool feed_byte(uint8_t c);
  bool complete() const { return mode_ == Mode::kDone; }
  // Inside a string, between characters (not in an escape or a UTF-8 sequence): where any
  // run of plain string bytes may follow, whatever the string belongs to.
  bool in_plain_string() const { return mode_ == Mode::kString && utf8_left_ == 0; }

 private:
  enum class Mode : uint8_t {
    kValue,         // a value must start (whitespace allowed)
    kArrayFirst,    // after '[': a value or ']'
    kObjectFirst,   // after '{': a key or '}'
    kKey,           // after ',' in an object: a key
    kColon,         // after a key
    kAfterValue,    // ',' or the container's close
    kString,
    kEscape,        // after '\'
    kHex,           // inside \uXXXX
    kNumMinus,      // after '-'
    kNumZero,       // a leading 0
    kNumInt,
    kNumDot,        // after '.'
    kNumFrac,
    kNumE,          // after 'e'
    kNumESign,      // after the exponent's sign
    kNumExp,
    kLiteral,       // inside true / false / null
    kDone,
  };

  bool start_value(uint8_t c);
  bool end_value();                 // a value ended: where the container says to go
  bool string_byte(uint8_t c);
  bool push(bool object);
  bool digit_then(uint8_t c, Mode next);  // a digit must come; the number goes on in `next`
  bool whitespace(uint8_t c);       // counts a whitespace byte outside strings

  Options options_;
  Mode mode_ = Mode::kValue;
  bool string_is_key_ = false;
  uint8_t depth_ = 0;
  uint64_t objects_ = 0;            // bit d: level d is an object (else an array)
  uint8_t hex_left_ = 0;
  uint8_t utf8_left_ = 0;           // continuation bytes still due
  uint8_t utf8_lo_ = 0x80, utf8_hi_ = 0xBF;  // range of the next continuation byte
  const char* literal_ = nullptr;   // the rest of true / false / null
  uint8_t run_cr_ = 0, run_lf_ = 0, run_indent_ = 0;  // the current whitespace run
};

}  // namespace keel::sampling
