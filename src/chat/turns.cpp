#include "chat/turns.h"

namespace keel::chat::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

std::string trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && is_space(text[begin])) ++begin;
  while (end > begin && is_space(text[end - 1])) --end;
  return std::string(text.substr(begin, end - begin));
}

std::string join_instructions(std::span<const Message> messages) {
  std::string joined;
  for (const Message& m : messages) {
    if (!is_instruction(m.role)) continue;
    if (!joined.empty()) joined += "\n\n";
    joined += m.content;
  }
  return joined;
}

FoldedConversation fold_system(std::span<const Message> messages, SystemPlacement placement) {
  FoldedConversation out;
  bool any_instruction = false;
  for (const Message& m : messages) {
    if (is_instruction(m.role)) {
      any_instruction = true;
    } else {
      out.turns.push_back(m);
    }
  }
  if (!any_instruction) return out;
  out.system = join_instructions(messages);
  for (int i = 0; i < static_cast<int>(out.turns.size()); ++i) {
    if (out.turns[i].role != Role::kUser) continue;
    out.system_turn = i;
    if (placement == SystemPlacement::kFirstUser) break;
  }
  if (out.system_turn < 0) {
    // Instructions but no user turn: they become a user turn of their own, first.
    out.turns.insert(out.turns.begin(), Message{Role::kUser, "", ""});
    out.system_turn = 0;
  }
  return out;
}

std::string prefix_system(const std::string& system, const std::string& content) {
  if (system.empty()) return content;
  if (content.empty()) return system;
  return system + "\n\n" + content;
}

}  // namespace keel::chat::detail
