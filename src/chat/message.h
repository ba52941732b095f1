// Chat messages as the chat templates see them: a role and a content string, plus the
// calls an assistant turn made and the call (and function name) a tool result answers.
//
// Contract:
//  - parse_role() accepts exactly "system", "user", "assistant", "tool", "developer"
//    (OpenAI's roles) and throws keel::Error(kInvalidArgument) naming anything else.
//  - Plain values; thread-safe to share read-only.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keel::chat {

enum class Role { kSystem, kUser, kAssistant, kTool, kDeveloper };

// A function call the assistant made (chat/tools.h): arguments are JSON text.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

struct Message {
  Message() = default;
  Message(Role r, std::string text, std::string function_name = "")
      : role(r), content(std::move(text)), name(std::move(function_name)) {}

  Role role = Role::kUser;
  std::string content;
  std::string name;                 // tool messages: the function whose result this is (may be empty)
  std::vector<ToolCall> tool_calls;  // assistant messages: the calls it made
  std::string tool_call_id;         // tool messages: the call this answers (may be empty)
};

Role parse_role(std::string_view role);
const char* role_name(Role role);

// System and developer messages both carry instructions; families without a developer
// role treat them alike.
inline bool is_instruction(Role role) { return role == Role::kSystem || role == Role::kDeveloper; }

}  // namespace keel::chat
