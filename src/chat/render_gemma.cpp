// Gemma (1/2/3): user/model turns; no system role, so instructions open the first user turn.
#include "chat/renderers.h"
#include "chat/turns.h"

namespace keel::chat::detail {

std::string render_gemma(std::span<const Message> messages, const RenderOptions& options) {
  const FoldedConversation conv = fold_system(messages, SystemPlacement::kFirstUser);
  std::string out = options.bos_token;
  for (int i = 0; i < static_cast<int>(conv.turns.size()); ++i) {
    const Message& m = conv.turns[i];
    const bool model = m.role == Role::kAssistant;
    std::string content = trim(m.content);
    if (i == conv.system_turn) content = prefix_system(conv.system, content);
    out += model ? "<start_of_turn>model\n" : "<start_of_turn>user\n";
    out += content + "<end_of_turn>\n";
  }
  if (options.add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

}  // namespace keel::chat::detail
