// OpenAI harmony (gpt-oss), per the harmony response-format guide: a system message with
// the model's meta information, the request's instructions as a developer message, and
// assistant history on the final channel (earlier chain-of-thought is dropped, as the
// guide recommends once a final answer was given).
#include "chat/renderers.h"
#include "chat/turns.h"
#include "core/error.h"

namespace keel::chat::detail {
namespace {

std::string system_block(const HarmonyOptions& h) {
  if (h.reasoning_effort != "low" && h.reasoning_effort != "medium" && h.reasoning_effort != "high") {
    throw Error(ErrorCode::kInvalidArgument, "chat: harmony reasoning_effort '" + h.reasoning_effort +
                                                 "' is not one of low, medium, high");
  }
  std::string s = "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n";
  s += "Knowledge cutoff: " + h.knowledge_cutoff + "\n";
  if (!h.current_date.empty()) s += "Current date: " + h.current_date + "\n";
  s += "\nReasoning: " + h.reasoning_effort + "\n\n";
  s += "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";
  return s;
}

}  // namespace

std::string render_harmony(std::span<const Message> messages, const RenderOptions& options) {
  std::string out = system_block(options.harmony);
  const std::string instructions = join_instructions(messages);
  if (!instructions.empty()) {
    out += "<|start|>developer<|message|># Instructions\n\n" + instructions + "<|end|>";
  }
  for (const Message& m : messages) {
    switch (m.role) {
      case Role::kSystem:
      case Role::kDeveloper:
        break;  // rendered above
      case Role::kUser:
        out += "<|start|>user<|message|>" + m.content + "<|end|>";
        break;
      case Role::kAssistant:
        out += "<|start|>assistant<|channel|>final<|message|>" + m.content + "<|end|>";
        break;
      case Role::kTool:
        out += "<|start|>functions" + (m.name.empty() ? std::string() : "." + m.name) +
               " to=assistant<|channel|>commentary<|message|>" + m.content + "<|end|>";
        break;
    }
  }
  if (options.add_generation_prompt) out += "<|start|>assistant";
  return out;
}

}  // namespace keel::chat::detail
