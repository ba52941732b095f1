// Chat messages as the chat templates see them: a role and a content string (plus the
// tool name a tool result belongs to, which harmony's format names).
//
// Contract:
//  - parse_role() accepts exactly "system", "user", "assistant", "tool", "developer"
//    (OpenAI's roles) and throws keel::Error(kInvalidArgument) naming anything else.
//  - Plain values; thread-safe to share read-only.
#pragma once

#include <string>
#include <string_view>

namespace keel::chat {

enum class Role { kSystem, kUser, kAssistant, kTool, kDeveloper };

struct Message {
  Role role = Role::kUser;
  std::string content;
  std::string name;  // tool messages: the function whose result this is (may be empty)
};

Role parse_role(std::string_view role);
const char* role_name(Role role);

// System and developer messages both carry instructions; families without a developer
// role treat them alike.
inline bool is_instruction(Role role) { return role == Role::kSystem || role == Role::kDeveloper; }

}  // namespace keel::chat
