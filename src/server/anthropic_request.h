// Anthropic's Messages API request (POST /v1/messages), read into the chat
// CompletionRequest the chat route runs.
//
// Contract:
//  - parse_anthropic_request() takes the body (a JSON object) and returns a validated chat
//    request, or throws ApiError 400 naming the parameter.
//  - Taken: model, max_tokens (required, as Anthropic requires it), system (a string or
//    text blocks: a system turn first), messages (roles user and assistant; content a
//    string or blocks: text; an assistant's tool_use {id, name, input} becomes its call,
//    a user's tool_result {tool_use_id, content} a tool turn before the user's text),
//    stop_sequences, temperature (0..1), top_p, top_k, stream, tools ({name, description,
//    input_schema}), tool_choice (auto, any = required, tool + name, none); metadata is
//    accepted without effect.
//  - A 400 "unsupported", never a silent drop: image / document blocks, server tools
//    (a tool with a "type"), extended thinking when enabled.
//  - Pure; thread-safe.
#pragma once

#include <string_view>

#include "server/json_io.h"
#include "server/openai_request.h"

namespace keel::server {

CompletionRequest parse_anthropic_request(const json& body, const RequestLimits& limits, std::string_view raw_body = {});

}  // namespace keel::server
