// The function-calling fields of a chat request (`tools`, `tool_choice`,
// `parallel_tool_calls`, messages' `tool_calls` / `tool_call_id`): parsed and validated
// for parse_chat_request() (server/openai_request.h states the rules). Internal to the
// server module.
#pragma once

#include <string>
#include <vector>

#include "chat/tools.h"
#include "server/json_io.h"
#include "server/openai_request.h"

namespace keel::server {

// obj[key] as a string ("" when absent and not required), or a 400 naming param.key.
std::string string_field(const json& obj, const char* key, const std::string& param, bool required);
// A message's `tool_calls` (assistant); `param` names the message ("messages[i]").
std::vector<chat::ToolCall> parse_message_tool_calls(const json& message, const std::string& param);
std::vector<chat::ToolSpec> parse_tools(const json& body);
// Needs req->tools parsed; sets tool_choice, tool_choice_name and parallel_tool_calls.
void parse_tool_choice(const json& body, CompletionRequest* req);

}  // namespace keel::server
