// Server-sent events framing for OpenAI-style streams. A stream is a sequence of
// `data: <json>\n\n` events ended by `data: [DONE]\n\n`; a line starting with ':' is a
// comment that clients ignore, used as the keep-alive heartbeat.
#pragma once

#include <string>
#include <string_view>

#include "server/json_io.h"

namespace keel::server {

inline constexpr std::string_view kSseHeartbeat = ": keep-alive\n\n";
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// One event. dump() never emits a raw newline (JSON escapes them), so one line suffices.
inline std::string sse_data(const json& value) { return "data: " + dump(value) + "\n\n"; }

}  // namespace keel::server
