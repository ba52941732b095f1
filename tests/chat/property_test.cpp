// Random conversations through every family: rendering never throws for valid input and
// never loses a message's text.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chat/template.h"
#include "chat/turns.h"

namespace keel::chat {
namespace {

constexpr ChatFamily kAllFamilies[] = {
    ChatFamily::kLlama2,    ChatFamily::kLlama3,          ChatFamily::kChatML,    ChatFamily::kGemma,
    ChatFamily::kMistralV1, ChatFamily::kMistralV3,       ChatFamily::kMistralV3Tekken,
    ChatFamily::kMistralV7, ChatFamily::kMistralV7Tekken, ChatFamily::kPhi3,      ChatFamily::kHarmony,
};

struct Lcg {
  uint64_t state;
  uint32_t next(uint32_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>((state >> 33) % bound);
  }
};

std::string random_content(Lcg& rng) {
  static const char* const kPieces[] = {"hello", " ", "\n", "  padded  ", "<|im_end|>", "[INST]",
                                        "{\"a\": 1}", "\xc3\xa9t\xc3\xa9", "", "\t"};
  std::string out;
  const uint32_t n = rng.next(5);
  for (uint32_t i = 0; i < n; ++i) out += kPieces[rng.next(10)];
  return out;
}

TEST(ChatProperty, EveryFamilyRendersRandomConversationsKeepingAllText) {
  Lcg rng{12345};
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<Message> msgs;
    const uint32_t n = 1 + rng.next(6);
    for (uint32_t i = 0; i < n; ++i) {
      msgs.push_back({static_cast<Role>(rng.next(5)), random_content(rng), rng.next(2) ? "fn" : ""});
    }
    RenderOptions o;
    o.add_generation_prompt = rng.next(2) == 0;
    o.bos_token = "<s>";
    o.eos_token = "</s>";
    for (ChatFamily f : kAllFamilies) {
      std::string out;
      ASSERT_NO_THROW(out = render_chat(f, msgs, o)) << family_name(f) << " trial " << trial;
      for (const Message& m : msgs) {
        // Some families trim contents; the trimmed text must survive.
        EXPECT_NE(out.find(detail::trim(m.content)), std::string::npos)
            << family_name(f) << " trial " << trial << " lost '" << m.content << "'";
      }
    }
  }
}

}  // namespace
}  // namespace keel::chat
