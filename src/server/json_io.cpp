#include "server/json_io.h"

#include <algorithm>

#include "core/json_depth.h"
#include "core/utf8.h"
#include "server/api_error.h"

namespace keel::server {
std::optional<size_t> find_invalid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const Utf8Decoded d = decode_utf8(text.substr(i));
    if (!d.valid) return i;
    i += d.length;
  }
  return std::nullopt;
}

namespace {

// Deepest nesting of arrays/objects in JSON text (strings skipped). The parser and the
// value's destructor recurse per level, so depth is bounded before parsing: a body of
// "[[[[…" must be a 400, not a stack overflow.
size_t nesting_depth(std::string_view text) {
  JsonDepth depth;
  int deepest = 0;
  for (char c : text) deepest = std::max(deepest, depth.push(c));
  return static_cast<size_t>(deepest);
}

}  // namespace

json parse_body(std::string_view body) {
  if (const auto bad = find_invalid_utf8(body)) {
    throw bad_request("", "request body is not valid UTF-8 (byte offset " +
                              std::to_string(*bad) + ")", "invalid_utf8");
  }
  if (nesting_depth(body) > kMaxJsonDepth) {
    throw bad_request("", "request body nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) +
                              " levels", "invalid_json");
  }
  json value = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    // Parse again only to get the parser's message with its byte position.
    std::string detail = "malformed JSON";
    try {
      const json again = json::parse(body);
      (void)again;
    } catch (const json::exception& e) {
      detail = e.what();
    }
    throw bad_request("", "request body is not valid JSON: " + detail, "invalid_json");
  }
  if (!value.is_object()) {
    throw bad_request("", std::string("request body must be a JSON object, got ") +
                              value.type_name(), "invalid_json");
  }
  return value;
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace keel::server
