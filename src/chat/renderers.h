// Internal: one renderer per family (formats documented in chat/template.h). Each takes a
// non-empty conversation; render_chat() checks that and dispatches here.
#pragma once

#include <span>
#include <string>

#include "chat/message.h"
#include "chat/template.h"

namespace keel::chat::detail {

std::string render_llama2(std::span<const Message> messages, const RenderOptions& options);
std::string render_llama3(std::span<const Message> messages, const RenderOptions& options);
std::string render_chatml(std::span<const Message> messages, const RenderOptions& options);
std::string render_phi3(std::span<const Message> messages, const RenderOptions& options);
std::string render_gemma(std::span<const Message> messages, const RenderOptions& options);
std::string render_mistral(ChatFamily family, std::span<const Message> messages,
                           const RenderOptions& options);
std::string render_harmony(std::span<const Message> messages, const RenderOptions& options);

}  // namespace keel::chat::detail
