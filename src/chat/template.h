// Built-in chat templates: render a conversation into the prompt text a model family was
// trained on. A real Jinja engine is a later issue; until then the GGUF's
// `tokenizer.chat_template` is only used to recognise the family.
//
// Families and their formats (B = bos_token, E = eos_token, as given in RenderOptions;
// an empty bos_token emits nothing, for callers whose tokenizer adds BOS itself):
//   llama2        B[INST] <<SYS>>\n{sys}\n<</SYS>>\n\n{user} [/INST] {assistant} E B[INST] ...
//                 (contents stripped; no generation prompt needed: the text ends in [/INST])
//   llama3        B<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>...
//                 gen: <|start_header_id|>assistant<|end_header_id|>\n\n (contents trimmed;
//                 tool → role "ipython", as Llama 3.1+; 3.1's default "Cutting Knowledge
//                 Date" system preamble is not invented)
//   chatml        <|im_start|>{role}\n{content}<|im_end|>\n ... gen: <|im_start|>assistant\n
//                 (Qwen 1.5/2/2.5/3, Hermes, Yi, …; no default system prompt is invented)
//   gemma         B<start_of_turn>user\n{content}<end_of_turn>\n<start_of_turn>model\n...
//                 gen: <start_of_turn>model\n (contents trimmed)
//   mistral-v1    B [INST] {user} [/INST] {assistant}E [INST] ...       (7B v0.1/v0.2, 8x7B)
//   mistral-v3    B[INST] {user}[/INST] {assistant}E[INST] ...          (7B v0.3, Large 2407)
//   mistral-v3-tekken  B[INST]{user}[/INST]{assistant}E ...             (Nemo)
//   mistral-v7    B[SYSTEM_PROMPT] {sys}[/SYSTEM_PROMPT][INST] {user}[/INST] {assistant}E
//   mistral-v7-tekken  the same without the spaces                      (Small 3)
//   phi3          B<|{role}|>\n{content}<|end|>\n ... gen: <|assistant|>\n
//   harmony       gpt-oss: <|start|>system<|message|>{identity, cutoff, date, reasoning,
//                 channels}<|end|><|start|>developer<|message|># Instructions\n\n{sys}<|end|>
//                 <|start|>user<|message|>{user}<|end|><|start|>assistant<|channel|>final
//                 <|message|>{assistant}<|end|> ... gen: <|start|>assistant
//
// Roles a family lacks:
//  - System/developer in families without one (llama2, gemma, mistral v1/v3): all of them,
//    joined by "\n\n", go into one user turn — llama2 as a <<SYS>> block in the first,
//    gemma and mistral-v1 as "{sys}\n\n" before the first, mistral-v3 before the last
//    (where Mistral's own templates put it). With no user turn they form one on their own.
//    Developer messages are system messages everywhere except harmony.
//  - Tool results: llama3 "ipython"; chatml role "tool"; mistral v3/v7 [TOOL_RESULTS];
//    harmony functions.{name} on the commentary channel; elsewhere a user turn.
//  - Role alternation is not enforced (the families' Jinja templates raise on it; serving a
//    slightly unusual conversation beats refusing it).
//
// Contract: render_chat() throws keel::Error(kInvalidArgument) for an empty conversation
// and for a harmony reasoning_effort other than low/medium/high; pure functions,
// thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/message.h"
#include "chat/tools.h"

namespace keel::chat {

enum class ChatFamily {
  kLlama2,
  kLlama3,
  kChatML,
  kGemma,
  kMistralV1,
  kMistralV3,
  kMistralV3Tekken,
  kMistralV7,
  kMistralV7Tekken,
  kPhi3,
  kHarmony,
};

// The family used when a template is missing or not recognised.
inline constexpr ChatFamily kFallbackFamily = ChatFamily::kChatML;

const char* family_name(ChatFamily family);
// All names family_from_name() accepts, comma-separated (for help texts and errors).
std::string family_names();
// By name (as --chat-template takes it): the family_name()s plus the aliases "qwen"
// (chatml) and "gpt-oss" (harmony). Unknown → keel::Error(kInvalidArgument) listing the
// valid names.
ChatFamily family_from_name(std::string_view name);

struct TemplateChoice {
  ChatFamily family = kFallbackFamily;
  bool recognised = false;  // false: fallback; the server logs a warning
};

// Recognises a family from the Jinja source in `tokenizer.chat_template` by distinctive
// substrings (special tokens and spacing). Empty or unknown → {kFallbackFamily, false}.
TemplateChoice detect_template(std::string_view jinja);

// What the server does at start-up: a --chat-template name wins (recognised = true; an
// unknown name throws as family_from_name does), else detection from the GGUF's template.
TemplateChoice choose_template(std::string_view name_override, std::string_view jinja);

struct HarmonyOptions {
  std::string reasoning_effort = "medium";  // low | medium | high (else kInvalidArgument)
  std::string knowledge_cutoff = "2024-06";
  std::string current_date;                 // "YYYY-MM-DD"; empty omits the line
};

struct RenderOptions {
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  HarmonyOptions harmony;
  std::vector<ToolSpec> tools;  // functions the model may call (chat/tools.h); empty: none
};

std::string render_chat(ChatFamily family, std::span<const Message> messages,
                        const RenderOptions& options);

}  // namespace keel::chat
