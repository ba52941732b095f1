#include "chat/message.h"

#include "core/error.h"

namespace keel::chat {

Role parse_role(std::string_view role) {
  if (role == "system") return Role::kSystem;
  if (role == "user") return Role::kUser;
  if (role == "assistant") return Role::kAssistant;
  if (role == "tool") return Role::kTool;
  if (role == "developer") return Role::kDeveloper;
  throw Error(ErrorCode::kInvalidArgument,
              "chat: unknown message role '" + std::string(role) +
                  "' (expected system, user, assistant, tool or developer)");
}

const char* role_name(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
    case Role::kDeveloper: return "developer";
  }
  return "unknown";
}

}  // namespace keel::chat
