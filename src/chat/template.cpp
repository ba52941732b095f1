#include "chat/template.h"

#include <algorithm>
#include <iterator>

#include "chat/renderers.h"
#include "core/error.h"

namespace keel::chat {
namespace {

struct NamedFamily {
  const char* name;
  ChatFamily family;
};

// Canonical names first (family_name() returns these), then aliases.
constexpr NamedFamily kNames[] = {
    {"llama2", ChatFamily::kLlama2},
    {"llama3", ChatFamily::kLlama3},
    {"chatml", ChatFamily::kChatML},
    {"gemma", ChatFamily::kGemma},
    {"mistral-v1", ChatFamily::kMistralV1},
    {"mistral-v3", ChatFamily::kMistralV3},
    {"mistral-v3-tekken", ChatFamily::kMistralV3Tekken},
    {"mistral-v7", ChatFamily::kMistralV7},
    {"mistral-v7-tekken", ChatFamily::kMistralV7Tekken},
    {"phi3", ChatFamily::kPhi3},
    {"harmony", ChatFamily::kHarmony},
    {"qwen", ChatFamily::kChatML},
    {"gpt-oss", ChatFamily::kHarmony},
};

bool has(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

// Templates with [INST]: Llama 2 (<<SYS>>) or one of Mistral's versions, told apart by
// their control tokens and by the spacing around [INST] / [/INST].
ChatFamily detect_inst_family(std::string_view t) {
  if (has(t, "[SYSTEM_PROMPT]")) {
    return has(t, "[SYSTEM_PROMPT] ") ? ChatFamily::kMistralV7 : ChatFamily::kMistralV7Tekken;
  }
  if (has(t, "<<SYS>>")) return ChatFamily::kLlama2;
  if (has(t, " [/INST]")) return ChatFamily::kMistralV1;
  if (has(t, "[INST] ")) return ChatFamily::kMistralV3;
  return ChatFamily::kMistralV3Tekken;
}

}  // namespace

const char* family_name(ChatFamily family) {
  for (const NamedFamily& n : kNames) {
    if (n.family == family) return n.name;
  }
  return "unknown";
}

std::string family_names() {
  std::string out;
  for (const NamedFamily& n : kNames) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

ChatFamily family_from_name(std::string_view name) {
  for (const NamedFamily& n : kNames) {
    if (name == n.name) return n.family;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "chat: unknown chat template name '" + std::string(name) + "' (known: " + family_names() + ")");
}

TemplateChoice detect_template(std::string_view t) {
  // Order matters: harmony's template also holds <|end|>, Phi-3's marker, so it goes first.
  if (has(t, "<|channel|>") || (has(t, "<|start|>") && has(t, "<|message|>"))) {
    return {ChatFamily::kHarmony, true};
  }
  if (has(t, "<|im_start|>")) return {ChatFamily::kChatML, true};
  if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return {ChatFamily::kLlama3, true};
  if (has(t, "<start_of_turn>")) return {ChatFamily::kGemma, true};
  if (has(t, "<|assistant|>") && has(t, "<|end|>")) return {ChatFamily::kPhi3, true};
  if (has(t, "[INST]")) return {detect_inst_family(t), true};
  return {kFallbackFamily, false};
}

TemplateChoice choose_template(std::string_view name_override, std::string_view jinja) {
  if (!name_override.empty()) return {family_from_name(name_override), true};
  return detect_template(jinja);
}

std::string render_chat(ChatFamily family, std::span<const Message> messages, const RenderOptions& options) {
  if (messages.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "chat: the conversation has no messages");
  }
  std::vector<Message> with_tools;
  const bool has_calls =
      std::any_of(messages.begin(), messages.end(), [](const Message& m) { return !m.tool_calls.empty(); });
  if (!options.tools.empty() || has_calls) {
    with_tools = apply_tools(tool_syntax(family), messages, options.tools);
    messages = with_tools;
  }
  switch (family) {
    case ChatFamily::kLlama2: return detail::render_llama2(messages, options);
    case ChatFamily::kLlama3: return detail::render_llama3(messages, options);
    case ChatFamily::kChatML: return detail::render_chatml(messages, options);
    case ChatFamily::kGemma: return detail::render_gemma(messages, options);
    case ChatFamily::kMistralV1:
    case ChatFamily::kMistralV3:
    case ChatFamily::kMistralV3Tekken:
    case ChatFamily::kMistralV7:
    case ChatFamily::kMistralV7Tekken: return detail::render_mistral(family, messages, options);
    case ChatFamily::kPhi3: return detail::render_phi3(messages, options);
    case ChatFamily::kHarmony: return detail::render_harmony(messages, options);
  }
  throw Error(ErrorCode::kInvalidArgument, "chat: invalid chat family value");
}

}  // namespace keel::chat
