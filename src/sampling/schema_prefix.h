// SchemaPrefix — an incremental check that a byte string is a prefix of a JSON text valid
// for a compiled JsonSchema (what sampling/json_schema.h enforces), with JsonPrefix's
// interface so JsonConstraint can drive either.
//
// How: a pushdown automaton over the schema — a stack of frames (object at a stage and
// property, array with its item count, a string / number / free value lexed by an inner
// JsonPrefix, an enum's literal being typed). anyOf keeps one stack per alternative still
// possible (the states are a set), so the check is exact for the enforced keywords.
//
// Contract:
//  - feed() / feed_byte() return false at the first byte no valid text continues with
//    (the state is then unspecified: probe on a copy, as with JsonPrefix).
//  - complete(): one whole root value has been read (trailing whitespace may follow).
//  - in_plain_string(): inside a free string value (not a key, not an enum) between
//    characters, in every live alternative alike — where any string-safe token fits.
//  - Whitespace outside strings: runs of at most one line break and JsonPrefix::kMaxIndent
//    spaces or tabs. Strings are JSON strings of valid UTF-8 (the inner JsonPrefix).
//  - Objects write their properties in schema order; at most kMaxStates alternatives live;
//    schema numbers are bounded in length (kMaxIntegerBytes, kMaxNumberBytes), so with
//    bounded arrays and no free strings every document ends within a bounded length.
//  - A value type; not thread-safe. Holds the schema by shared_ptr.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/json_prefix.h"
#include "sampling/json_schema.h"

namespace keel::sampling {

class SchemaPrefix {
 public:
  static constexpr size_t kMaxStates = 64;
  static constexpr size_t kMaxDepth = 64;
  static constexpr int64_t kMaxVisits = 256;  // schema nodes visited to start one value
  // Number values of the schema (not free values) are at most this many bytes, so a
  // model cannot run away in digits: integers 16 digits and a sign, numbers 24 bytes.
  static constexpr int64_t kMaxIntegerBytes = 17;
  static constexpr int64_t kMaxNumberBytes = 24;

  explicit SchemaPrefix(std::shared_ptr<const JsonSchema> schema);

  bool feed(std::string_view bytes);
  bool feed_byte(uint8_t c);
  bool complete() const;
  bool in_plain_string() const;

 private:
  struct Frame {
    enum class Kind : uint8_t { kValue, kObject, kArray, kLeaf, kLiterals };
    Kind kind = Kind::kValue;
    uint8_t stage = 0;     // object / array: where in the container (see the .cpp)
    bool integer = false;  // kLeaf: a number without fraction or exponent
    bool string = false;   // kLeaf: a free string value
    bool number = false;   // kLeaf: a schema number (length-bounded)
    int32_t node = 0;
    int64_t index = 0;     // object: property; array: items so far; number leaf: bytes so far
    std::string typed;     // object key / literal typed so far
    JsonPrefix leaf{JsonPrefix::Options{false}};
  };
  struct Stack {
    std::vector<Frame> frames;  // empty: the root value is complete
    uint8_t run_lf = 0, run_cr = 0, run_indent = 0;
  };

  void step(Stack s, uint8_t c, std::vector<Stack>* out) const;
  // `budget`: node visits left for this value's start — anyOf over shared $refs could
  // otherwise branch exponentially (a request must not be able to stall the engine).
  void begin_value(Stack s, int32_t node, uint8_t c, std::vector<Stack>* out, int64_t* budget) const;
  void value_done(Stack s, std::vector<Stack>* out, const uint8_t* redo) const;
  static bool whitespace(Stack* s, uint8_t c);
  static bool number_full(const Frame& f);

  std::shared_ptr<const JsonSchema> schema_;
  std::vector<Stack> stacks_;
};

}  // namespace keel::sampling
