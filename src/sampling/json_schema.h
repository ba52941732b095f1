// JsonSchema — a JSON Schema compiled into the few node kinds constrained decoding needs
// (OpenAI's `response_format: {"type": "json_schema"}`, sampling/schema_prefix.h).
//
// What is enforced: `type` (object, array, string, number, integer, boolean, null, or a
// list of them), object `properties` (written in the schema's order; a property not in
// `required` may be left out; no other keys are ever written), array `items`,
// `minItems` / `maxItems`, `enum` / `const` (any JSON values), `anyOf` / `oneOf` (as
// anyOf), local `$ref`s (`#`, `#/$defs/…`, `#/definitions/…`, recursion included), and `{}`
// / `true` as any value. An object without `properties` is any object.
// Annotations and value constraints keel does not enforce (`description`, `title`,
// `default`, `format`, `pattern`, `minLength`, `maximum`, `additionalProperties`, …) are
// accepted and ignored, so the output is valid for the enforced part only. `allOf`,
// `not`, `if`/`then`/`else` and remote `$ref`s are refused.
//
// Contract: compile() throws keel::Error(kInvalidArgument) naming the schema path of what
// it refuses (also: the root must be an object schema, as OpenAI requires — `{}` at the
// root means any object; at most 4096 nodes). The result is immutable and shared between requests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keel::sampling {

struct SchemaNode {
  enum class Kind : uint8_t { kAny, kAnyObject, kObject, kArray, kString, kNumber, kInteger, kLiterals, kAnyOf };
  Kind kind = Kind::kAny;
  std::vector<std::string> keys;         // kObject: property names as JSON text ("\"name\""), in order
  std::vector<int32_t> values;           // kObject: the node of each property
  std::vector<uint8_t> required;         // kObject: 1 = must be written
  int32_t items = -1;                    // kArray: node of the items
  int64_t min_items = 0, max_items = -1; // kArray; -1: no maximum
  std::vector<std::string> literals;     // kLiterals: compact JSON texts (enum / const / true / null)
  std::vector<int32_t> alternatives;     // kAnyOf
};

class JsonSchema {
 public:
  static std::shared_ptr<const JsonSchema> compile(std::string_view schema_json);

  const SchemaNode& node(int32_t i) const { return nodes_[static_cast<size_t>(i)]; }
  int32_t root() const { return 0; }
  size_t size() const { return nodes_.size(); }

 private:
  friend class SchemaCompiler;
  std::vector<SchemaNode> nodes_;
};

}  // namespace keel::sampling
