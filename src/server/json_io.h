// JSON in and out of the HTTP layer.
//
// Contract:
//  - parse_body() accepts only a body that is valid UTF-8, nested at most kMaxJsonDepth
//    levels, and one JSON object; anything
//    else throws ApiError 400 saying where and why (byte offset of bad UTF-8, the JSON
//    parser's position). It never lets the parser's own exception escape.
//  - dump() never throws on bad UTF-8 in a string (it replaces it with U+FFFD): output
//    text is valid UTF-8 by the engine's guarantee, and this is the last line of defence
//    so that no model output can turn into an HTTP 500.
//  - Stateless and thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/utf8.h"

namespace keel::server {

using json = nlohmann::json;

// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points
// above U+10FFFF included), or nullopt when `text` is valid.
std::optional<size_t> find_invalid_utf8(std::string_view text);

using keel::sanitize_utf8;  // core/utf8.h: invalid sequences → U+FFFD

inline constexpr size_t kMaxJsonDepth = 64;  // arrays/objects inside each other

json parse_body(std::string_view body);

std::string dump(const json& value);

}  // namespace keel::server
