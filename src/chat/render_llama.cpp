// Llama 2 and Llama 3 chat formats (see chat/template.h).
#include "chat/renderers.h"
#include "chat/turns.h"

namespace keel::chat::detail {

std::string render_llama2(std::span<const Message> messages, const RenderOptions& options) {
  const FoldedConversation conv = fold_system(messages, SystemPlacement::kFirstUser);
  std::string out;
  for (int i = 0; i < static_cast<int>(conv.turns.size()); ++i) {
    const Message& m = conv.turns[i];
    if (m.role == Role::kAssistant) {
      // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "literal" + temporary.
      out += ' ';
      out += trim(m.content);
      out += ' ';
      out += options.eos_token;
      continue;
    }
    std::string content = m.content;  // user, or a tool result shown as a user turn
    if (i == conv.system_turn && !conv.system.empty()) {
      content = "<<SYS>>\n" + conv.system + "\n<</SYS>>\n\n" + content;
    }
    out += options.bos_token + "[INST] " + trim(content) + " [/INST]";
  }
  // The format has no separate generation prompt: a prompt ending in [/INST] is one.
  return out;
}

std::string render_llama3(std::span<const Message> messages, const RenderOptions& options) {
  std::string out = options.bos_token;
  for (const Message& m : messages) {
    const char* role = m.role == Role::kTool ? "ipython"
                       : m.role == Role::kDeveloper ? "system"
                                                    : role_name(m.role);
    out += "<|start_header_id|>";
    out += role;
    out += "<|end_header_id|>\n\n" + trim(m.content) + "<|eot_id|>";
  }
  if (options.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

}  // namespace keel::chat::detail
