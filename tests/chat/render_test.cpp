// Exact renderings per family, written from each family's documented format (model cards,
// Mistral's tokenization guide, OpenAI's harmony guide), for one shared conversation.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chat/template.h"
#include "core/error.h"

namespace keel::chat {
namespace {

const std::vector<Message> kConversation = {
    {Role::kSystem, "You are a helpful assistant", ""},
    {Role::kUser, "Hello", ""},
    {Role::kAssistant, "Hi there", ""},
    {Role::kUser, "Who are you", ""},
    {Role::kAssistant, "   I am an assistant   ", ""},
    {Role::kUser, "Another question", ""},
};

RenderOptions tokens(const std::string& bos, const std::string& eos) {
  RenderOptions o;
  o.bos_token = bos;
  o.eos_token = eos;
  return o;
}

TEST(RenderChat, Llama2PutsSystemInSysBlockAndStrips) {
  EXPECT_EQ(render_chat(ChatFamily::kLlama2, kConversation, tokens("<s>", "</s>")),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] Hi there </s>"
            "<s>[INST] Who are you [/INST] I am an assistant </s><s>[INST] Another question [/INST]");
}

TEST(RenderChat, Llama3) {
  EXPECT_EQ(render_chat(ChatFamily::kLlama3, kConversation, tokens("<|begin_of_text|>", "<|eot_id|>")),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(RenderChat, ChatMLKeepsContentsVerbatimAndHasNoBos) {
  EXPECT_EQ(render_chat(ChatFamily::kChatML, kConversation, tokens("<s>", "<|im_end|>")),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n   I am an assistant   <|im_end|>\n"
            "<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n");
}

TEST(RenderChat, GemmaPrependsSystemToFirstUserTurn) {
  EXPECT_EQ(render_chat(ChatFamily::kGemma, kConversation, tokens("<bos>", "<eos>")),
            "<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
            "<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n"
            "<start_of_turn>model\nI am an assistant<end_of_turn>\n"
            "<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n");
}

TEST(RenderChat, MistralV1) {
  EXPECT_EQ(render_chat(ChatFamily::kMistralV1, kConversation, tokens("<s>", "</s>")),
            "<s> [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you [/INST]"
            "    I am an assistant   </s> [INST] Another question [/INST]");
}

TEST(RenderChat, MistralV3PutsSystemBeforeLastUserTurn) {
  EXPECT_EQ(render_chat(ChatFamily::kMistralV3, kConversation, tokens("<s>", "</s>")),
            "<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST] I am an assistant</s>"
            "[INST] You are a helpful assistant\n\nAnother question[/INST]");
}

TEST(RenderChat, MistralV3Tekken) {
  EXPECT_EQ(render_chat(ChatFamily::kMistralV3Tekken, kConversation, tokens("<s>", "</s>")),
            "<s>[INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an assistant   </s>"
            "[INST]You are a helpful assistant\n\nAnother question[/INST]");
}

TEST(RenderChat, MistralV7HasASystemPrompt) {
  EXPECT_EQ(render_chat(ChatFamily::kMistralV7, kConversation, tokens("<s>", "</s>")),
            "<s>[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST] Hi there</s>"
            "[INST] Who are you[/INST]    I am an assistant   </s>[INST] Another question[/INST]");
  EXPECT_EQ(render_chat(ChatFamily::kMistralV7Tekken, kConversation, tokens("<s>", "</s>")),
            "<s>[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT][INST]Hello[/INST]Hi there</s>"
            "[INST]Who are you[/INST]   I am an assistant   </s>[INST]Another question[/INST]");
}

TEST(RenderChat, Phi3) {
  EXPECT_EQ(render_chat(ChatFamily::kPhi3, kConversation, tokens("", "<|endoftext|>")),
            "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n"
            "<|assistant|>\nHi there<|end|>\n<|user|>\nWho are you<|end|>\n"
            "<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother question<|end|>\n<|assistant|>\n");
}

TEST(RenderChat, HarmonySystemDeveloperAndFinalChannel) {
  RenderOptions o;
  o.harmony.reasoning_effort = "high";
  o.harmony.current_date = "2025-06-28";
  EXPECT_EQ(render_chat(ChatFamily::kHarmony, kConversation, o),
            "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
            "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: high\n\n"
            "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>"
            "<|start|>developer<|message|># Instructions\n\nYou are a helpful assistant<|end|>"
            "<|start|>user<|message|>Hello<|end|>"
            "<|start|>assistant<|channel|>final<|message|>Hi there<|end|>"
            "<|start|>user<|message|>Who are you<|end|>"
            "<|start|>assistant<|channel|>final<|message|>   I am an assistant   <|end|>"
            "<|start|>user<|message|>Another question<|end|><|start|>assistant");
}

TEST(RenderChat, HarmonyWithoutInstructionsOrDateHasNoDeveloperMessage) {
  const std::vector<Message> msgs = {{Role::kUser, "What is 2 + 2?", ""}};
  EXPECT_EQ(render_chat(ChatFamily::kHarmony, msgs, RenderOptions{}),
            "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
            "Knowledge cutoff: 2024-06\n\nReasoning: medium\n\n"
            "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>"
            "<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant");
}

TEST(RenderChat, HarmonyRejectsUnknownReasoningEffort) {
  RenderOptions o;
  o.harmony.reasoning_effort = "extreme";
  EXPECT_THROW(render_chat(ChatFamily::kHarmony, kConversation, o), Error);
}

TEST(RenderChat, GenerationPromptIsOptional) {
  const std::vector<Message> msgs = {{Role::kUser, "Hi", ""}};
  RenderOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render_chat(ChatFamily::kChatML, msgs, o), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(render_chat(ChatFamily::kLlama3, msgs, o), "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  EXPECT_EQ(render_chat(ChatFamily::kGemma, msgs, o), "<start_of_turn>user\nHi<end_of_turn>\n");
  EXPECT_EQ(render_chat(ChatFamily::kPhi3, msgs, o), "<|user|>\nHi<|end|>\n");
  // Formats whose prompt ends in [/INST] render the same either way.
  EXPECT_EQ(render_chat(ChatFamily::kLlama2, msgs, o), "[INST] Hi [/INST]");
  EXPECT_EQ(render_chat(ChatFamily::kMistralV3, msgs, o), "[INST] Hi[/INST]");
}

TEST(RenderChat, SystemOnlyConversationFormsItsOwnUserTurn) {
  const std::vector<Message> msgs = {{Role::kSystem, "Be brief.", ""}};
  EXPECT_EQ(render_chat(ChatFamily::kGemma, msgs, RenderOptions{}),
            "<start_of_turn>user\nBe brief.<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(render_chat(ChatFamily::kLlama2, msgs, RenderOptions{}),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>> [/INST]");
}

TEST(RenderChat, SeveralInstructionMessagesAreJoinedWhereFolded) {
  const std::vector<Message> msgs = {
      {Role::kSystem, "Be brief.", ""},
      {Role::kUser, "Hi", ""},
      {Role::kDeveloper, "Answer in French.", ""},
  };
  EXPECT_EQ(render_chat(ChatFamily::kGemma, msgs, RenderOptions{}),
            "<start_of_turn>user\nBe brief.\n\nAnswer in French.\n\nHi<end_of_turn>\n<start_of_turn>model\n");
  // Families with a system role keep each message in place; developer reads as system.
  EXPECT_EQ(render_chat(ChatFamily::kChatML, msgs, RenderOptions{}),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>system\nAnswer in French.<|im_end|>\n<|im_start|>assistant\n");
}

TEST(RenderChat, ToolResultsUseEachFamilysConvention) {
  const std::vector<Message> msgs = {
      {Role::kUser, "Weather?", ""},
      {Role::kTool, "{\"t\": 20}", "get_weather"},
  };
  RenderOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render_chat(ChatFamily::kLlama3, msgs, o),
            "<|start_header_id|>user<|end_header_id|>\n\nWeather?<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n{\"t\": 20}<|eot_id|>");
  EXPECT_EQ(render_chat(ChatFamily::kChatML, msgs, o),
            "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>tool\n{\"t\": 20}<|im_end|>\n");
  EXPECT_EQ(render_chat(ChatFamily::kMistralV3, msgs, o), "[INST] Weather?[/INST][TOOL_RESULTS] {\"t\": 20}[/TOOL_RESULTS]");
  EXPECT_EQ(render_chat(ChatFamily::kGemma, msgs, o),
            "<start_of_turn>user\nWeather?<end_of_turn>\n<start_of_turn>user\n{\"t\": 20}<end_of_turn>\n");
  const std::string harmony = render_chat(ChatFamily::kHarmony, msgs, o);
  EXPECT_NE(harmony.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"t\": 20}<|end|>"),
            std::string::npos)
      << harmony;
}

TEST(RenderChat, EmptyConversationIsAnError) {
  for (ChatFamily f : {ChatFamily::kLlama2, ChatFamily::kChatML, ChatFamily::kHarmony}) {
    try {
      render_chat(f, std::vector<Message>{}, RenderOptions{});
      ADD_FAILURE() << family_name(f);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("no messages"), std::string::npos);
    }
  }
}

TEST(Roles, ParseKnownRolesRejectOthersByName) {
  EXPECT_EQ(parse_role("system"), Role::kSystem);
  EXPECT_EQ(parse_role("user"), Role::kUser);
  EXPECT_EQ(parse_role("assistant"), Role::kAssistant);
  EXPECT_EQ(parse_role("tool"), Role::kTool);
  EXPECT_EQ(parse_role("developer"), Role::kDeveloper);
  for (const char* bad : {"bot", "", "User", "function"}) {
    try {
      parse_role(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace keel::chat
