// Mistral's instruct formats. The versions differ in spacing, in where instructions go,
// and in which control tokens exist, so one renderer walks a per-version style.
#include "chat/renderers.h"
#include "chat/turns.h"

namespace keel::chat::detail {
namespace {

struct MistralStyle {
  const char* inst_open;        // before a user turn
  const char* inst_close;       // after it
  const char* reply_prefix;     // before an assistant turn
  bool trim_reply;              // v3 trims assistant contents
  bool system_role;             // v7: [SYSTEM_PROMPT] in place; else folded into a user turn
  SystemPlacement placement;    // where folded instructions go
  const char* tool_open;        // nullptr: tool results become user turns
  const char* tool_close;
  const char* system_open;
  const char* system_close;
  const char* tools_open;       // [AVAILABLE_TOOLS], before the last user turn (nullptr: none)
};

MistralStyle style_of(ChatFamily family) {
  switch (family) {
    case ChatFamily::kMistralV3:
      return {"[INST] ", "[/INST]", " ", true, false, SystemPlacement::kLastUser,
              "[TOOL_RESULTS] ", "[/TOOL_RESULTS]", nullptr, nullptr, "[AVAILABLE_TOOLS] "};
    case ChatFamily::kMistralV3Tekken:
      return {"[INST]", "[/INST]", "", false, false, SystemPlacement::kLastUser,
              "[TOOL_RESULTS]", "[/TOOL_RESULTS]", nullptr, nullptr, "[AVAILABLE_TOOLS]"};
    case ChatFamily::kMistralV7:
      return {"[INST] ", "[/INST]", " ", false, true, SystemPlacement::kFirstUser,
              "[TOOL_RESULTS] ", "[/TOOL_RESULTS]", "[SYSTEM_PROMPT] ", "[/SYSTEM_PROMPT]",
              "[AVAILABLE_TOOLS] "};
    case ChatFamily::kMistralV7Tekken:
      return {"[INST]", "[/INST]", "", false, true, SystemPlacement::kFirstUser,
              "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
              "[AVAILABLE_TOOLS]"};
    default:  // v1
      return {" [INST] ", " [/INST]", " ", false, false, SystemPlacement::kFirstUser,
              nullptr, nullptr, nullptr, nullptr, nullptr};
  }
}

}  // namespace

std::string render_mistral(ChatFamily family, std::span<const Message> messages,
                           const RenderOptions& options) {
  const MistralStyle style = style_of(family);
  FoldedConversation conv;
  if (style.system_role) {
    conv.turns.assign(messages.begin(), messages.end());
  } else {
    conv = fold_system(messages, style.placement);
  }
  // Mistral's templates announce the functions just before the last user turn.
  int last_user = -1;
  for (int i = 0; i < static_cast<int>(conv.turns.size()); ++i) {
    if (conv.turns[i].role == Role::kUser) last_user = i;
  }
  const bool announce_tools = !options.tools.empty() && style.tools_open != nullptr;
  std::string out = options.bos_token;
  for (int i = 0; i < static_cast<int>(conv.turns.size()); ++i) {
    if (announce_tools && i == last_user) {
      out += style.tools_open + mistral_tools_block(options.tools) + "[/AVAILABLE_TOOLS]";
    }
    const Message& m = conv.turns[i];
    if (is_instruction(m.role)) {  // only reached with style.system_role
      out += style.system_open + m.content + style.system_close;
    } else if (m.role == Role::kAssistant) {
      out += style.reply_prefix + (style.trim_reply ? trim(m.content) : m.content) + options.eos_token;
    } else if (m.role == Role::kTool && style.tool_open != nullptr) {
      out += style.tool_open + m.content + style.tool_close;
    } else {
      const std::string content = i == conv.system_turn ? prefix_system(conv.system, m.content) : m.content;
      out += style.inst_open + content + style.inst_close;
    }
  }
  // Like Llama 2, a prompt ending in [/INST] already asks for the reply.
  return out;
}

}  // namespace keel::chat::detail
