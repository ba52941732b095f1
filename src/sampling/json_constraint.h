// JsonConstraint — keeps one request's output a JSON object (OpenAI's
// `response_format: {"type": "json_object"}`): before each draw, every token whose bytes
// could not continue a JSON object text (sampling/json_prefix.h) is masked, and the
// end-of-generation tokens are allowed only once the object is closed — and then they are
// the only ones, so generation ends there.
//
// Contract:
//  - TokenBytes is built once per vocabulary and shared (immutable): bytes[t] is what
//    token t adds to the output text (tokens that add nothing are never allowed: they
//    could repeat forever), end[t] marks end-of-generation tokens; string_safe[t] (derived)
//    marks tokens that are plain string content, valid wherever a string may go on.
//  - mask(logits) sets -inf on disallowed tokens of a row [n_vocab] and leaves the rest;
//    it depends only on the tokens accept()ed so far, so the same request gives the same
//    mask however it is batched. accept(t) must get every generated token, in order
//    (never the prompt's).
//  - Cost: one pass over the vocabulary per token, probing each allowed-so-far token's
//    bytes on a copy of the parser state — except tokens whose first byte cannot come next
//    and, inside a string (where JSON answers spend most tokens), the string-safe ones.
//  - Optional schema (JsonConstraintSpec::schema): the object must also be valid for that
//    JSON Schema (sampling/schema_prefix.h: what is enforced, properties in order).
//  - Optional prelude: when `preludes` is non-empty, the output must first be exactly one
//    of those strings (they must be prefix-free, e.g. `get_weather", "arguments": `),
//    then the object — how a required function call picks its name; prelude_schemas[i]
//    (when given) is the schema of the object after prelude i. While in the prelude every
//    token is probed (preludes are short, so this lasts a few tokens).
//  - Not thread-safe; owned by its request (the engine thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sampling/json_prefix.h"
#include "sampling/schema_prefix.h"

namespace keel::sampling {

struct TokenBytes {
  TokenBytes(std::vector<std::string> bytes, std::vector<uint8_t> end);  // throws if sizes differ

  std::vector<std::string> bytes;   // [n_vocab]
  std::vector<uint8_t> end;         // [n_vocab]: 1 = end of generation
  std::vector<uint8_t> string_safe; // [n_vocab]: no '"', and a plain string stays one after it
};

// What the constrained output must be (see JsonConstraint's contract).
struct JsonConstraintSpec {
  std::shared_ptr<const JsonSchema> schema;  // null: any JSON object
  std::vector<std::string> preludes;
  std::vector<std::shared_ptr<const JsonSchema>> prelude_schemas;  // empty, or one per prelude (null: any object)
};

// The object being checked: any JSON object, or one valid for a schema.
class ObjectChecker {
 public:
  explicit ObjectChecker(std::shared_ptr<const JsonSchema> schema = nullptr);
  bool feed(std::string_view bytes);
  bool feed_byte(uint8_t c);
  bool complete() const;
  bool in_plain_string() const;

 private:
  std::variant<JsonPrefix, SchemaPrefix> state_;
};

class JsonConstraint {
 public:
  // Throws kInvalidArgument for a null table, preludes that are empty strings or not
  // prefix-free, or prelude_schemas of another count than preludes.
  explicit JsonConstraint(std::shared_ptr<const TokenBytes> vocab, JsonConstraintSpec spec = {});

  void mask(std::span<float> logits) const;
  void accept(int32_t token);
  bool complete() const { return !in_prelude_ && state_.complete(); }

 private:
  // Feeds `bytes` into the prelude typed so far; returns false if no prelude continues
  // with them, else sets *rest to the offset where the object's bytes begin (npos: still
  // in the prelude).
  bool feed_prelude(std::string* typed, std::string_view bytes, size_t* rest) const;
  void mask_prelude(std::span<float> logits) const;

  // The checker for what follows the prelude typed so far (it is whole).
  ObjectChecker checker_after(const std::string& prelude) const;

  std::shared_ptr<const TokenBytes> vocab_;
  JsonConstraintSpec spec_;
  bool in_prelude_ = false;
  std::string typed_;  // prelude bytes so far
  ObjectChecker state_;
};

}  // namespace keel::sampling
