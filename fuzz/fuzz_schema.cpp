// libFuzzer target for JSON Schema constrained decoding (request input reaches both the
// compiler and the checker): the input is "schema\0text". The schema is compiled (a refusal
// is keel::Error, the only acceptable failure); the text is fed byte by byte to a checker,
// and at every byte a copy is probed with each byte value, as the mask does. Nothing may
// crash, hang or report under ASan/UBSan; and a byte the checker accepted must keep it
// alive (feed_byte true means there is a state).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "sampling/json_schema.h"
#include "sampling/schema_prefix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view schema_text = input.substr(0, split);
  const std::string_view text = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  std::shared_ptr<const keel::sampling::JsonSchema> schema;
  try {
    schema = keel::sampling::JsonSchema::compile(schema_text);
  } catch (const keel::Error&) {
    return 0;
  }
  keel::sampling::SchemaPrefix p(schema);
  for (size_t i = 0; i < text.size() && i < 256; ++i) {
    if (i % 16 == 0) {
      for (int b = 0; b < 256; ++b) {
        keel::sampling::SchemaPrefix probe = p;
        (void)probe.feed_byte(static_cast<uint8_t>(b));
        (void)probe.complete();
        (void)probe.in_plain_string();
      }
    }
    if (!p.feed_byte(static_cast<uint8_t>(text[i]))) break;
  }
  (void)p.complete();
  return 0;
}
