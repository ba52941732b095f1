// Detection from excerpts of real `tokenizer.chat_template` strings (short distinctive
// parts of the published Jinja templates), and selection by name.
#include <string>

#include <gtest/gtest.h>

#include "chat/template.h"
#include "core/error.h"

namespace keel::chat {
namespace {

void expect_detected(const std::string& jinja, ChatFamily family) {
  const TemplateChoice choice = detect_template(jinja);
  EXPECT_TRUE(choice.recognised) << jinja;
  EXPECT_EQ(family_name(choice.family), std::string(family_name(family))) << jinja;
}

TEST(DetectTemplate, Llama3Instruct) {
  // Meta-Llama-3-8B-Instruct
  expect_detected(
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
      "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
      "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
      "{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}",
      ChatFamily::kLlama3);
}

TEST(DetectTemplate, Qwen25IsChatML) {
  // Qwen2.5-7B-Instruct
  expect_detected(
      "{%- else %}\n        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a "
      "helpful assistant.<|im_end|>\\n' }}\n    {%- endif %}\n{%- endif %}\n{%- for message in messages %}",
      ChatFamily::kChatML);
  // teknium/OpenHermes-2.5-Mistral-7B: a ChatML fine-tune of a Mistral model.
  expect_detected(
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
      ChatFamily::kChatML);
}

TEST(DetectTemplate, Gemma2) {
  // google/gemma-2-9b-it
  expect_detected(
      "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
      "{% endif %}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}"
      "{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + "
      "message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}"
      "{{'<start_of_turn>model\n'}}{% endif %}",
      ChatFamily::kGemma);
}

TEST(DetectTemplate, Llama2Chat) {
  // meta-llama/Llama-2-7b-chat-hf
  expect_detected(
      "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
      "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
      "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}",
      ChatFamily::kLlama2);
}

TEST(DetectTemplate, MistralVersionsBySpacingAndControlTokens) {
  // Mistral-7B-Instruct-v0.1 / v0.2 (no system prompt)
  expect_detected(
      "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
      "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}",
      ChatFamily::kMistralV1);
  // Mistral's official 'v1' template with a system prompt
  expect_detected(
      "{%- if loop.first and system_message is defined %}\n            {{- ' [INST] ' + system_message + "
      "'\\n\\n' + message['content'] + ' [/INST]' }}",
      ChatFamily::kMistralV1);
  // Mistral-Large-Instruct-2407 / Mistral-7B-Instruct-v0.3 ('v3')
  expect_detected(
      "{{- \"[AVAILABLE_TOOLS] [\" }}{%- if loop.last and system_message is defined %}\n"
      "{{- \"[INST] \" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}",
      ChatFamily::kMistralV3);
  // Mistral-Nemo-Instruct-2407 ('v3-tekken')
  expect_detected(
      "{{- \"[AVAILABLE_TOOLS][\" }}{%- if loop.last and system_message is defined %}\n"
      "{{- \"[INST]\" + system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}",
      ChatFamily::kMistralV3Tekken);
  // Mistral-Large-Instruct-2411 ('v7')
  expect_detected(
      "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
      "message['content'] + '[/INST]' }}{% elif message['role'] == 'system' %}{{ '[SYSTEM_PROMPT] ' + "
      "message['content'] + '[/SYSTEM_PROMPT]' }}",
      ChatFamily::kMistralV7);
  // Mistral-Small-24B-Instruct-2501 ('v7-tekken')
  expect_detected(
      "{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}{%- for message in loop_messages %}"
      "{%- if message['role'] == 'user' %}{{- '[INST]' + message['content'] + '[/INST]' }}",
      ChatFamily::kMistralV7Tekken);
}

TEST(DetectTemplate, Phi3) {
  // microsoft/Phi-3-mini-4k-instruct
  expect_detected(
      "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + "
      "message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') %}"
      "{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}",
      ChatFamily::kPhi3);
}

TEST(DetectTemplate, GptOssHarmony) {
  // openai/gpt-oss-20b
  expect_detected(
      "{#- Render system message #}\n{{- \"<|start|>system<|message|>\" }}\n{{- build_system_message() }}\n"
      "{{- \"<|end|>\" }}\n{{- \"<|start|>assistant<|channel|>final<|message|>\" + message.content + \"<|end|>\" }}",
      ChatFamily::kHarmony);
}

TEST(DetectTemplate, UnknownOrMissingFallsBackToChatMLWithWarningFlag) {
  for (const std::string& jinja :
       {std::string(), std::string("{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}{% endfor %}")}) {
    const TemplateChoice choice = detect_template(jinja);
    EXPECT_FALSE(choice.recognised);
    EXPECT_EQ(choice.family, kFallbackFamily);
    EXPECT_EQ(choice.family, ChatFamily::kChatML);
  }
}

TEST(ChooseTemplate, NameOverridesDetectionElseDetects) {
  const std::string llama3 = "{{ '<|start_header_id|>' + role + '<|end_header_id|>' }}";
  EXPECT_EQ(choose_template("gemma", llama3).family, ChatFamily::kGemma);
  EXPECT_TRUE(choose_template("gemma", "").recognised);
  EXPECT_EQ(choose_template("", llama3).family, ChatFamily::kLlama3);
  EXPECT_FALSE(choose_template("", "no markers here").recognised);
  EXPECT_THROW(choose_template("nope", llama3), Error);
}

TEST(FamilyNames, RoundTripAndAliases) {
  for (ChatFamily f : {ChatFamily::kLlama2, ChatFamily::kLlama3, ChatFamily::kChatML, ChatFamily::kGemma,
                       ChatFamily::kMistralV1, ChatFamily::kMistralV3, ChatFamily::kMistralV3Tekken,
                       ChatFamily::kMistralV7, ChatFamily::kMistralV7Tekken, ChatFamily::kPhi3,
                       ChatFamily::kHarmony}) {
    EXPECT_EQ(family_from_name(family_name(f)), f) << family_name(f);
  }
  EXPECT_EQ(family_from_name("qwen"), ChatFamily::kChatML);
  EXPECT_EQ(family_from_name("gpt-oss"), ChatFamily::kHarmony);
}

TEST(FamilyNames, UnknownNameIsAnErrorListingTheKnownOnes) {
  try {
    family_from_name("vicuna");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'vicuna'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("llama3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("harmony"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace keel::chat
