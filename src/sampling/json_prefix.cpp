#include "sampling/json_prefix.h"

namespace keel::sampling {
namespace {

bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

JsonPrefix::JsonPrefix(const Options& options) : options_(options) {}

bool JsonPrefix::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (!feed_byte(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool JsonPrefix::whitespace(uint8_t c) {
  if (c == '\r') return ++run_cr_ <= 1 && run_lf_ == 0;
  if (c == '\n') return ++run_lf_ <= 1;
  return ++run_indent_ <= kMaxIndent;
}

bool JsonPrefix::digit_then(uint8_t c, Mode next) {
  if (!is_digit(c)) return false;
  mode_ = next;
  return true;
}

bool JsonPrefix::push(bool object) {
  if (depth_ >= kMaxDepth) return false;
  const uint64_t bit = uint64_t{1} << depth_;
  objects_ = object ? (objects_ | bit) : (objects_ & ~bit);
  ++depth_;
  mode_ = object ? Mode::kObjectFirst : Mode::kArrayFirst;
  return true;
}

bool JsonPrefix::end_value() {
  mode_ = depth_ == 0 ? Mode::kDone : Mode::kAfterValue;
  return true;
}

bool JsonPrefix::start_value(uint8_t c) {
  const bool top = depth_ == 0;
  if (top && options_.object_only && c != '{') return false;
  switch (c) {
    case '{': return push(true);
    case '[': return push(false);
    case '"':
      mode_ = Mode::kString;
      string_is_key_ = false;
      return true;
    case '-': mode_ = Mode::kNumMinus; return true;
    case '0': mode_ = Mode::kNumZero; return true;
    case 't': literal_ = "rue"; mode_ = Mode::kLiteral; return true;
    case 'f': literal_ = "alse"; mode_ = Mode::kLiteral; return true;
    case 'n': literal_ = "ull"; mode_ = Mode::kLiteral; return true;
    default:
      if (c >= '1' && c <= '9') {
        mode_ = Mode::kNumInt;
        return true;
      }
      return false;
  }
}

bool JsonPrefix::string_byte(uint8_t c) {
  if (utf8_left_ > 0) {
    if (c < utf8_lo_ || c > utf8_hi_) return false;
    --utf8_left_;
    utf8_lo_ = 0x80;
    utf8_hi_ = 0xBF;
    return true;
  }
  if (c == '"') {
    if (string_is_key_) {
      mode_ = Mode::kColon;
      return true;
    }
    return end_value();
  }
  if (c == '\\') {
    mode_ = Mode::kEscape;
    return true;
  }
  if (c < 0x20) return false;
  if (c < 0x80) return true;
  // A UTF-8 lead byte: how many continuation bytes follow, and the range of the first
  // (which rules out overlong forms, surrogates and code points past U+10FFFF).
  if (c >= 0xC2 && c <= 0xDF) {
    utf8_left_ = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    utf8_left_ = 2;
    if (c == 0xE0) utf8_lo_ = 0xA0;
    if (c == 0xED) utf8_hi_ = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    utf8_left_ = 3;
    if (c == 0xF0) utf8_lo_ = 0x90;
    if (c == 0xF4) utf8_hi_ = 0x8F;
  } else {
    return false;
  }
  return true;
}

bool JsonPrefix::feed_byte(uint8_t c) {
  if (mode_ != Mode::kString && mode_ != Mode::kEscape && mode_ != Mode::kHex) {
    // Whitespace ends a number or sits between tokens; inside a literal it is an error.
    if (is_ws(c)) {
      switch (mode_) {
        case Mode::kNumZero:
        case Mode::kNumInt:
        case Mode::kNumFrac:
        case Mode::kNumExp:
          end_value();
          return whitespace(c);
        case Mode::kNumMinus:
        case Mode::kNumDot:
        case Mode::kNumE:
        case Mode::kNumESign:
        case Mode::kLiteral:
          return false;
        default:
          return whitespace(c);
      }
    }
    run_cr_ = run_lf_ = run_indent_ = 0;
  }
  switch (mode_) {
    case Mode::kValue:
      return start_value(c);
    case Mode::kArrayFirst:
      if (c == ']') {
        --depth_;
        return end_value();
      }
      return start_value(c);
    case Mode::kObjectFirst:
      if (c == '}') {
        --depth_;
        return end_value();
      }
      [[fallthrough]];
    case Mode::kKey:
      if (c != '"') return false;
      mode_ = Mode::kString;
      string_is_key_ = true;
      return true;
    case Mode::kColon:
      if (c != ':') return false;
      mode_ = Mode::kValue;
      return true;
    case Mode::kAfterValue: {
      const bool object = (objects_ >> (depth_ - 1)) & 1;
      if (c == ',') {
        mode_ = object ? Mode::kKey : Mode::kValue;
        return true;
      }
      if (c == (object ? '}' : ']')) {
        --depth_;
        return end_value();
      }
      return false;
    }
    case Mode::kString:
      return string_byte(c);
    case Mode::kEscape:
      switch (c) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
          mode_ = Mode::kString;
          return true;
        case 'u':
          mode_ = Mode::kHex;
          hex_left_ = 4;
          return true;
        default:
          return false;
      }
    case Mode::kHex:
      if (!is_hex(c)) return false;
      if (--hex_left_ == 0) mode_ = Mode::kString;
      return true;
    case Mode::kNumMinus:
      if (c == '0') {
        mode_ = Mode::kNumZero;
        return true;
      }
      if (c >= '1' && c <= '9') {
        mode_ = Mode::kNumInt;
        return true;
      }
      return false;
    case Mode::kNumZero:
    case Mode::kNumInt:
      if (mode_ == Mode::kNumInt && is_digit(c)) return true;
      if (c == '.') {
        mode_ = Mode::kNumDot;
        return true;
      }
      if (c == 'e' || c == 'E') {
        mode_ = Mode::kNumE;
        return true;
      }
      end_value();  // the number ended; c is the next token's
      return feed_byte(c);
    case Mode::kNumDot:
      return digit_then(c, Mode::kNumFrac);
    case Mode::kNumFrac:
      if (is_digit(c)) return true;
      if (c == 'e' || c == 'E') {
        mode_ = Mode::kNumE;
        return true;
      }
      end_value();
      return feed_byte(c);
    case Mode::kNumE:
      if (c == '+' || c == '-') {
        mode_ = Mode::kNumESign;
        return true;
      }
      [[fallthrough]];
    case Mode::kNumESign:
      return digit_then(c, Mode::kNumExp);
    case Mode::kNumExp:
      if (is_digit(c)) return true;
      end_value();
      return feed_byte(c);
    case Mode::kLiteral:
      if (c != static_cast<uint8_t>(*literal_)) return false;
      if (*++literal_ == '\0') return end_value();
      return true;
    case Mode::kDone:
      return false;  // only whitespace (handled above) may follow the value
  }
  return false;
}

}  // namespace keel::sampling
