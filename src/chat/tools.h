// Function calling ("tools"): how each chat family shows the available functions to the
// model, how its models write a call, and reading calls back out of generated text.
//
// Call syntaxes (ToolSyntax, by family):
//   kHermes   chatml, gemma, phi3, llama2, mistral-v1: the functions are listed in the
//             instructions (Qwen 2.5's wording, which Hermes-style fine-tunes share) and a
//             call is  <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>  (one or
//             more; text before the first is the reply's content). Tool results go back
//             wrapped in <tool_response>\n...\n</tool_response>.
//   kLlama3   llama3 (Llama 3.1+ JSON calling): the functions go into the first user turn
//             with Meta's instruction; a call is the whole reply  {"name": N, "parameters":
//             {...}}  (also read: "arguments"; several separated by ';').
//   kMistral  mistral v3/v7 (and tekken): [AVAILABLE_TOOLS][...][/AVAILABLE_TOOLS] before
//             the last user turn; a call is  [TOOL_CALLS][{"name": N, "arguments": {...}}]
//             — [TOOL_CALLS] is a control token, invisible in decoded text, so a reply that
//             is such an array is read as calls with or without it.
//   kNone     harmony (gpt-oss): its channel-based calls are not implemented;
//             tool_syntax() says so and the server refuses `tools` for it.
//
// Contract:
//  - apply_tools() rewrites a conversation so the family's renderer shows the tools (when
//    any) and earlier calls and results in the family's syntax; render_chat does this when
//    RenderOptions::tools is non-empty or an assistant turn carries tool_calls (else tool
//    results keep the family's plain convention, chat/template.h). Pure.
//  - parse_tool_calls() never throws: text that does not hold a complete, well-formed call
//    (valid JSON, a string name, an object of arguments) is content, calls = {}.
//  - content_prefix_length(): during streaming, how many leading bytes of the text so far
//    are content whatever comes next (everything from a possible call opening on is held).
//  - call_opening(): the text that starts a call to a function, up to and including
//    `{"name": "` — appended to the prompt when a call is required, after which the model
//    writes the name's rest; call_closing() completes the text after the arguments object.
//  - ToolCall ids are the caller's; ids of parsed calls are left empty (the server names them).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/message.h"

namespace keel::chat {

enum class ChatFamily;

struct ToolSpec {
  std::string name;         // [A-Za-z0-9_-]{1,64}, as OpenAI requires
  std::string description;  // may be empty
  std::string parameters;   // JSON Schema of the arguments, as JSON text ("{}" if none)
};

enum class ToolSyntax { kNone, kHermes, kLlama3, kMistral };

ToolSyntax tool_syntax(ChatFamily family);

// The conversation as the family's renderer should see it, with the tools (non-empty)
// announced and earlier calls / results written in the family's syntax.
std::vector<Message> apply_tools(ToolSyntax syntax, std::span<const Message> messages,
                                 std::span<const ToolSpec> tools);

struct ParsedReply {
  std::string content;          // text outside the calls (trimmed when calls were found)
  std::vector<ToolCall> calls;  // in order; arguments as compact JSON text of an object
};

ParsedReply parse_tool_calls(ToolSyntax syntax, std::string_view text);

size_t content_prefix_length(ToolSyntax syntax, std::string_view text);

std::string call_opening(ToolSyntax syntax);
// The rest of the call after `"name": "N` — `", "arguments": ` (llama3: "parameters").
std::string call_name_end(ToolSyntax syntax);
std::string call_closing(ToolSyntax syntax);

// The [AVAILABLE_TOOLS] payload of the mistral formats: the functions as a JSON list.
std::string mistral_tools_block(std::span<const ToolSpec> tools);

// The text of calls as the family's model writes them (assistant history).
std::string format_tool_calls(ToolSyntax syntax, std::span<const ToolCall> calls);

}  // namespace keel::chat
