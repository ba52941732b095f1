// Internal helpers shared by the renderers (not part of the chat API).
//
// fold_system() implements the "family without a system role" rule of chat/template.h:
// it removes system/developer messages from the conversation, joins their contents with
// "\n\n", and names the user turn that receives them (creating one when there is none).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/message.h"

namespace keel::chat::detail {

// Python's str.strip() / Jinja's trim for ASCII whitespace.
std::string trim(std::string_view text);

enum class SystemPlacement { kFirstUser, kLastUser };

struct FoldedConversation {
  std::vector<Message> turns;  // no system/developer messages
  std::string system;          // their contents joined by "\n\n"; empty if none
  int system_turn = -1;        // index in turns of the user turn receiving `system`, or -1
};

FoldedConversation fold_system(std::span<const Message> messages, SystemPlacement placement);

// "{system}\n\n{content}", or just the one that is non-empty.
std::string prefix_system(const std::string& system, const std::string& content);

// Instruction text of every system/developer message, joined by "\n\n".
std::string join_instructions(std::span<const Message> messages);

}  // namespace keel::chat::detail
