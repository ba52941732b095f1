// OpenAI's Responses API request (POST /v1/responses), read into the chat CompletionRequest
// the chat route runs.
//
// Contract:
//  - parse_responses_request() takes the body (a JSON object) and returns a validated chat
//    request, or throws ApiError 400 naming the parameter.
//  - Taken: model, input (a string, or items: messages {role, content} / {"type":
//    "message", ...} with roles user, system, developer, assistant and content a string or
//    input_text / output_text parts; function_call {call_id, name, arguments}, consecutive
//    ones one assistant turn; function_call_output {call_id, output}, a tool turn),
//    instructions (a system message first), tools (function tools, in chat's shape),
//    tool_choice, parallel_tool_calls, max_output_tokens, temperature, top_p, stream,
//    text.format (text, json_object, json_schema), reasoning.effort, user. store, metadata,
//    truncation "disabled", include and service_tier are accepted without effect (keel
//    keeps no responses).
//  - A 400 "unsupported", never a silent drop: hosted tools (web_search, file_search, ...),
//    other input items (reasoning, ...), image / file / audio parts, previous_response_id
//    and conversation (nothing is stored to continue from), truncation "auto", background
//    mode.
//  - Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/json_io.h"
#include "server/openai_request.h"

namespace keel::server {

struct ResponsesRequest {
  CompletionRequest chat;                       // Endpoint::kChat, n = 1
  std::optional<std::string> instructions;      // echoed in the response
  std::optional<int64_t> max_output_tokens;     // echoed
  json text_format = {{"type", "text"}};        // echoed as text.format
};

ResponsesRequest parse_responses_request(const json& body, const RequestLimits& limits, std::string_view raw_body = {});

}  // namespace keel::server
