// Function calling in the chat formats: tools announced where each family's template puts
// them, earlier calls and results in the family's syntax, and calls read back out of text
// (anything malformed stays content).
#include "chat/tools.h"

#include <gtest/gtest.h>

#include "chat/template.h"

namespace keel::chat {
namespace {

const std::vector<ToolSpec> kTools = {
    {"get_weather", "Weather of a city", R"({"type":"object","properties":{"city":{"type":"string"}}})"},
};

std::vector<Message> history() {
  Message call(Role::kAssistant, "");
  call.tool_calls = {{"call_1", "get_weather", R"({"city":"Paris"})"}};
  Message result(Role::kTool, "sunny");
  result.tool_call_id = "call_1";
  return {{Role::kUser, "Weather?"}, call, result};
}

RenderOptions with_tools(bool generation_prompt = true) {
  RenderOptions o;
  o.add_generation_prompt = generation_prompt;
  o.tools = kTools;
  return o;
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(ToolsRender, ChatMLListsToolsInTheSystemTurnAndWritesHermesCalls) {
  const std::string out = render_chat(ChatFamily::kChatML, history(), with_tools());
  EXPECT_TRUE(out.starts_with("<|im_start|>system\n# Tools\n")) << out;
  EXPECT_TRUE(has(out, "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
                       "\"Weather of a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
                       "{\"type\": \"string\"}}}}}\n</tools>"))
      << out;
  EXPECT_TRUE(has(out, "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Paris\"}}\n</tool_call><|im_end|>\n"))
      << out;
  EXPECT_TRUE(has(out, "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n")) << out;
  EXPECT_TRUE(out.ends_with("<|im_start|>assistant\n"));
}

TEST(ToolsRender, AnExistingSystemMessageKeepsItsTextFirst) {
  std::vector<Message> msgs = {{Role::kSystem, "Be brief."}, {Role::kUser, "Hi"}};
  const std::string out = render_chat(ChatFamily::kChatML, msgs, with_tools());
  EXPECT_TRUE(out.starts_with("<|im_start|>system\nBe brief.\n\n# Tools\n")) << out;
  EXPECT_EQ(out.find("<|im_start|>system", 1), std::string::npos);  // one system turn
}

TEST(ToolsRender, Llama3PutsToolsIntoTheFirstUserTurn) {
  const std::string out = render_chat(ChatFamily::kLlama3, history(), with_tools());
  EXPECT_TRUE(has(out, "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions")) << out;
  EXPECT_TRUE(has(out, "\"name\": \"get_weather\"")) << out;
  EXPECT_TRUE(has(out, "Weather?<|eot_id|>")) << out;
  EXPECT_TRUE(has(out, "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": "
                       "{\"city\": \"Paris\"}}<|eot_id|>"))
      << out;
  EXPECT_TRUE(has(out, "<|start_header_id|>ipython<|end_header_id|>\n\nsunny<|eot_id|>")) << out;
}

TEST(ToolsRender, MistralAnnouncesToolsBeforeTheLastUserTurn) {
  std::vector<Message> msgs = history();
  msgs.push_back({Role::kUser, "And tomorrow?"});
  RenderOptions o = with_tools();
  o.bos_token = "<s>";
  o.eos_token = "</s>";
  const std::string out = render_chat(ChatFamily::kMistralV3, msgs, o);
  const size_t tools = out.find("[AVAILABLE_TOOLS] [{\"type\": \"function\"");
  ASSERT_NE(tools, std::string::npos) << out;
  EXPECT_EQ(out.find("[INST] And tomorrow?[/INST]"), out.find("[/AVAILABLE_TOOLS]") + 18) << out;
  EXPECT_LT(out.find("[INST] Weather?"), tools);
  EXPECT_TRUE(has(out, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
                       "\"call_1\"}]</s>"))
      << out;
  EXPECT_TRUE(has(out, "[TOOL_RESULTS] {\"content\": \"sunny\", \"call_id\": \"call_1\"}[/TOOL_RESULTS]")) << out;
  const std::string tekken = render_chat(ChatFamily::kMistralV7Tekken, msgs, o);
  EXPECT_TRUE(has(tekken, "[AVAILABLE_TOOLS][{")) << tekken;
}

TEST(ToolsRender, HistoryWithCallsRendersEvenWithoutTools) {
  const std::string out = render_chat(ChatFamily::kChatML, history(), RenderOptions{});
  EXPECT_FALSE(has(out, "# Tools"));
  EXPECT_TRUE(has(out, "<tool_call>\n{\"name\": \"get_weather\"")) << out;
}

TEST(ToolsRender, WithoutToolsOrCallsNothingChanges) {
  const std::vector<Message> msgs = {{Role::kUser, "Hi"}, {Role::kTool, "r"}};
  EXPECT_EQ(render_chat(ChatFamily::kChatML, msgs, RenderOptions{}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>tool\nr<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ToolsParse, HermesCallsAndTheTextAroundThem) {
  const ParsedReply r = parse_tool_calls(
      ToolSyntax::kHermes,
      "Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n"
      "{\"name\": \"b\", \"arguments\": \"{\\\"y\\\": [2]}\"}\n</tool_call>");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "a");
  EXPECT_EQ(r.calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(r.calls[1].name, "b");
  EXPECT_EQ(r.calls[1].arguments, "{\"y\":[2]}");  // quoted arguments read as the object
  EXPECT_EQ(r.content, "Checking.");
  // A last call without its closing tag (the end token came first) still counts.
  EXPECT_EQ(parse_tool_calls(ToolSyntax::kHermes, "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}").calls.size(), 1u);
}

// Where <tool_call> is a control token the tags vanish from the text: bare call objects
// (one or several, whitespace between) still read as calls; other JSON stays content.
TEST(ToolsParse, HermesBareCallsWhenTheTagsAreInvisible) {
  ParsedReply r = parse_tool_calls(ToolSyntax::kHermes,
                                   "\n{\"name\": \"a\", \"arguments\": {\"s\": \"}{\"}}\n{\"name\": \"b\", \"arguments\": {}}\n");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, "{\"s\":\"}{\"}");  // braces inside strings do not split
  EXPECT_EQ(r.calls[1].name, "b");
  EXPECT_EQ(r.content, "");
  for (const std::string& text : {std::string("{\"a\": 1}"), std::string("{\"name\": \"a\", \"arguments\": {}} and more"),
                                 std::string("{\"name\": \"a\", \"arguments\": {")}) {
    r = parse_tool_calls(ToolSyntax::kHermes, text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolsParse, MalformedCallsAreContent) {
  for (const std::string& text : {
           std::string("<tool_call>\n{\"name\": \"a\", \"arguments\": {"),
           std::string("<tool_call>\n{\"arguments\": {}}\n</tool_call>"),
           std::string("<tool_call>\n{\"name\": 5, \"arguments\": {}}\n</tool_call>"),
           std::string("<tool_call>\n{\"name\": \"a\", \"arguments\": [1]}\n</tool_call>"),
           std::string("no calls here"),
       }) {
    const ParsedReply r = parse_tool_calls(ToolSyntax::kHermes, text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_EQ(r.content, text);
  }
}

TEST(ToolsParse, Llama3WholeReplyCalls) {
  ParsedReply r = parse_tool_calls(ToolSyntax::kLlama3, " {\"name\": \"a\", \"parameters\": {\"q\": \"x;y\"}} ");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, "{\"q\":\"x;y\"}");
  r = parse_tool_calls(ToolSyntax::kLlama3, "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {}}");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].name, "b");
  EXPECT_TRUE(parse_tool_calls(ToolSyntax::kLlama3, "The answer is {x}").calls.empty());
  EXPECT_TRUE(parse_tool_calls(ToolSyntax::kLlama3, "{\"a\": 1}").calls.empty());
}

TEST(ToolsParse, MistralWithOrWithoutTheVisibleMarker) {
  for (const std::string& text : {std::string("[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"k\": true}}]"),
                                 std::string("[{\"name\": \"a\", \"arguments\": {\"k\": true}}]")}) {
    const ParsedReply r = parse_tool_calls(ToolSyntax::kMistral, text);
    ASSERT_EQ(r.calls.size(), 1u) << text;
    EXPECT_EQ(r.calls[0].arguments, "{\"k\":true}");
  }
  EXPECT_TRUE(parse_tool_calls(ToolSyntax::kMistral, "[1, 2]").calls.empty());
}

TEST(ToolsParse, ContentPrefixHoldsWhatCouldOpenACall) {
  EXPECT_EQ(content_prefix_length(ToolSyntax::kHermes, "Hello <tool"), 6u);
  EXPECT_EQ(content_prefix_length(ToolSyntax::kHermes, "Hello <b>"), 9u);
  EXPECT_EQ(content_prefix_length(ToolSyntax::kHermes, "ab<tool_call>{"), 2u);
  EXPECT_EQ(content_prefix_length(ToolSyntax::kHermes, " {\"name"), 0u);  // maybe a bare call: held
  EXPECT_EQ(content_prefix_length(ToolSyntax::kLlama3, "  "), 0u);
  EXPECT_EQ(content_prefix_length(ToolSyntax::kLlama3, " {\"na"), 0u);
  EXPECT_EQ(content_prefix_length(ToolSyntax::kLlama3, "Sure"), 4u);
  EXPECT_EQ(content_prefix_length(ToolSyntax::kMistral, "[{"), 0u);
  EXPECT_EQ(content_prefix_length(ToolSyntax::kMistral, "Ok [TOOL_"), 3u);
}

TEST(ToolsParse, ForcedOpeningNameAndClosingMakeACall) {
  for (ToolSyntax s : {ToolSyntax::kHermes, ToolSyntax::kLlama3, ToolSyntax::kMistral}) {
    const std::string text = call_opening(s) + "f" + call_name_end(s) + "{\"a\": 1}" + call_closing(s);
    const ParsedReply r = parse_tool_calls(s, text);
    ASSERT_EQ(r.calls.size(), 1u) << text;
    EXPECT_EQ(r.calls[0].name, "f");
    EXPECT_EQ(r.calls[0].arguments, "{\"a\":1}");
    // And what format_tool_calls writes reads back the same.
    EXPECT_EQ(parse_tool_calls(s, format_tool_calls(s, r.calls)).calls.at(0).arguments, "{\"a\":1}");
  }
}

TEST(ToolsSyntax, ByFamily) {
  EXPECT_EQ(tool_syntax(ChatFamily::kChatML), ToolSyntax::kHermes);
  EXPECT_EQ(tool_syntax(ChatFamily::kGemma), ToolSyntax::kHermes);
  EXPECT_EQ(tool_syntax(ChatFamily::kLlama3), ToolSyntax::kLlama3);
  EXPECT_EQ(tool_syntax(ChatFamily::kMistralV7), ToolSyntax::kMistral);
  EXPECT_EQ(tool_syntax(ChatFamily::kHarmony), ToolSyntax::kNone);
}

}  // namespace
}  // namespace keel::chat
