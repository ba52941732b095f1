// Parsing and validation of OpenAI chat-completion and completion requests.
//
// Contract:
//  - parse_chat_request() / parse_completion_request() take the body (already a JSON
//    object, see parse_body) and return a fully validated CompletionRequest, or throw
//    ApiError 400 naming the offending parameter. Nothing about the model is looked up
//    here except the vocabulary size (token ids, logit_bias keys).
//  - Unknown fields are ignored (clients send extras); known fields of the wrong type or
//    out of range are errors, and so are features keel does not implement (non-text
//    content parts, best_of > 1, the legacy `functions`) — never silently dropped.
//    What a JSON Schema may use is the schema compiler's to refuse (sampling/json_schema.h).
//  - Chat `tools` (at most 128 functions; names [A-Za-z0-9_-]{1,64}, unique; parameters an
//    object), `tool_choice` (naming a listed function) and `parallel_tool_calls` are
//    validated here; assistant messages may carry `tool_calls` and tool messages
//    `tool_call_id`. server/tool_calls.h decides what they do.
//  - Extensions beyond OpenAI's schema: top_k, min_p, repeat_penalty, ignore_eos.
//  - The generation part is an engine::Request without its prompt: the caller renders /
//    tokenizes the prompt and fills it in.
//  - Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tools.h"
#include "engine/request_spec.h"
#include "server/json_io.h"

namespace keel::server {

enum class Endpoint { kChat, kCompletion };

struct ChatMessage {
  std::string role;     // system | developer | user | assistant | tool
  std::string content;  // text parts joined
  std::vector<chat::ToolCall> tool_calls;  // assistant: the calls it made
  std::string tool_call_id;                // tool: the call this result answers
  std::string name;                        // tool: the function (optional)
};

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}}.
enum class ToolChoice { kNone, kAuto, kRequired, kFunction };

// One prompt of a completion request: text, or token ids as given.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> tokens;  // when there is no text
};

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;  // as the client named it (echoed back)

  std::vector<ChatMessage> messages;          // kChat
  std::vector<chat::ToolSpec> tools;          // kChat: functions the model may call
  ToolChoice tool_choice = ToolChoice::kNone; // default: auto with tools, none without
  std::string tool_choice_name;               // kFunction: the function that must be called
  bool parallel_tool_calls = true;            // false: at most one call per reply
  std::string reasoning_effort;               // kChat: low | medium | high (harmony's system block); empty: default
  std::string assistant_prefix;               // kChat: text the reply is made to start with (a forced call)
  std::vector<PromptInput> prompts;           // kCompletion: one or more, each with n choices
  bool echo = false;                          // kCompletion: the prompt goes before the text (and its logprobs first)
  std::optional<std::string> suffix;          // kCompletion: fill in the middle between each prompt and this

  engine::Request generation;  // prompt left empty; sampling, max_tokens, stop, logprobs
  bool seed_given = false;     // false: the caller picks a fresh seed
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
  int32_t n = 1;               // choices: n requests of the same prompt (seeds seed, seed + 1, ...)
};

struct RequestLimits {
  int32_t n_vocab = 0;  // token ids and logit_bias keys must be in [0, n_vocab)
  int32_t max_stop = 16;
  int32_t default_completion_max_tokens = 16;  // OpenAI's default for /v1/completions
  int32_t max_choices = 16;  // n
  int32_t max_prompts = 64;  // completions: prompts in one request (each with n choices)
};

// `raw_body` (the text `body` was parsed from), when given, keeps the key order of JSON
// Schemas (tool parameters, response_format json_schema) — `json` sorts keys, and
// objects are written in their schema's property order.
CompletionRequest parse_chat_request(const json& body, const RequestLimits& limits, std::string_view raw_body = {});
CompletionRequest parse_completion_request(const json& body, const RequestLimits& limits,
                                           std::string_view raw_body = {});

}  // namespace keel::server
