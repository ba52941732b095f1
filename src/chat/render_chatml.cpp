// ChatML (Qwen and many fine-tunes) and Phi-3: role-tagged turns, contents verbatim.
#include "chat/renderers.h"

namespace keel::chat::detail {

std::string render_chatml(std::span<const Message> messages, const RenderOptions& options) {
  std::string out;
  for (const Message& m : messages) {
    const char* role = m.role == Role::kDeveloper ? "system" : role_name(m.role);
    out += "<|im_start|>";
    out += role;
    out += "\n" + m.content + "<|im_end|>\n";
  }
  if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string render_phi3(std::span<const Message> messages, const RenderOptions& options) {
  std::string out = options.bos_token;
  for (const Message& m : messages) {
    const char* role = m.role == Role::kDeveloper ? "system"
                       : m.role == Role::kTool    ? "user"  // Phi-3 has no tool role
                                                  : role_name(m.role);
    out += "<|";
    out += role;
    out += "|>\n" + m.content + "<|end|>\n";
  }
  if (options.add_generation_prompt) out += "<|assistant|>\n";
  return out;
}

}  // namespace keel::chat::detail
