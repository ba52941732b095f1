// ToolCallReader and plan_tool_calls: what is streamed while a call might be starting,
// what a finished reply splits into, and the constraint a forced call puts on the request.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace keel::server {
namespace {

using chat::ToolSyntax;

CompletionRequest chat_with_tools(ToolChoice choice, std::string name = "") {
  CompletionRequest r;
  r.endpoint = Endpoint::kChat;
  r.tools = {{"get_weather", "", "{}"}, {"get_time", "", "{}"}};
  r.tool_choice = choice;
  r.tool_choice_name = std::move(name);
  return r;
}

TEST(ToolCallPlan, AutoParsesWithoutConstraining) {
  CompletionRequest r = chat_with_tools(ToolChoice::kAuto);
  const ToolCallPlan plan = plan_tool_calls(&r, ToolSyntax::kHermes);
  EXPECT_TRUE(plan.active);
  EXPECT_FALSE(plan.forced);
  EXPECT_FALSE(r.generation.json_object);
  EXPECT_TRUE(r.assistant_prefix.empty());
}

TEST(ToolCallPlan, NoneOrNoToolsIsInactive) {
  CompletionRequest r = chat_with_tools(ToolChoice::kNone);
  EXPECT_FALSE(plan_tool_calls(&r, ToolSyntax::kHermes).active);
  CompletionRequest plain;
  EXPECT_FALSE(plan_tool_calls(&plain, ToolSyntax::kNone).active);  // no tools: fine for any format
}

TEST(ToolCallPlan, RequiredConstrainsTheNameToTheListedOnes) {
  CompletionRequest r = chat_with_tools(ToolChoice::kRequired);
  const ToolCallPlan plan = plan_tool_calls(&r, ToolSyntax::kHermes);
  EXPECT_TRUE(plan.forced);
  EXPECT_EQ(r.assistant_prefix, "<tool_call>\n{\"name\": \"");
  EXPECT_TRUE(r.generation.json_object);
  EXPECT_EQ(r.generation.json_constraint.preludes,
            (std::vector<std::string>{"get_weather\", \"arguments\": ", "get_time\", \"arguments\": "}));
}

TEST(ToolCallPlan, NamedFunctionGoesIntoThePrompt) {
  CompletionRequest r = chat_with_tools(ToolChoice::kFunction, "get_time");
  plan_tool_calls(&r, ToolSyntax::kLlama3);
  EXPECT_EQ(r.assistant_prefix, "{\"name\": \"get_time\", \"parameters\": ");
  EXPECT_TRUE(r.generation.json_object);
  EXPECT_TRUE(r.generation.json_constraint.preludes.empty());
}

TEST(ToolCallPlan, FormatWithoutCallSyntaxIsA400) {
  CompletionRequest r = chat_with_tools(ToolChoice::kAuto);
  try {
    plan_tool_calls(&r, ToolSyntax::kNone);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "tools");
  }
}

// Feeds text in pieces of `step` bytes; returns what was streamed and the final reply.
std::pair<std::string, chat::ParsedReply> run(ToolCallReader reader, const std::string& text, size_t step) {
  std::string streamed;
  for (size_t i = 0; i < text.size(); i += step) streamed += reader.push(text.substr(i, step));
  return {streamed, reader.finish()};
}

TEST(ToolCallReader, ContentBeforeACallStreamsAndTheCallComesWhole) {
  ToolCallPlan plan;
  plan.active = true;
  plan.syntax = ToolSyntax::kHermes;
  const std::string text = "Let me check.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  for (size_t step : {1u, 3u, 7u, 200u}) {
    SCOPED_TRACE(step);
    auto [streamed, reply] = run(ToolCallReader(plan), text, step);
    EXPECT_EQ(streamed, "Let me check.\n");  // nothing of the marker leaks, whatever the split
    ASSERT_EQ(reply.calls.size(), 1u);
    EXPECT_EQ(reply.calls[0].name, "get_time");
    EXPECT_EQ(reply.calls[0].arguments, "{}");
    EXPECT_EQ(reply.calls[0].id.rfind("call_", 0), 0u);
    EXPECT_EQ(reply.content, "");  // already streamed
  }
}

TEST(ToolCallReader, ParallelToolCallsFalseKeepsTheFirstCall) {
  CompletionRequest r = chat_with_tools(ToolChoice::kAuto);
  r.parallel_tool_calls = false;
  const std::string two = "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                          "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>";
  auto [streamed, reply] = run(ToolCallReader(plan_tool_calls(&r, ToolSyntax::kHermes)), two, 9);
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.calls[0].name, "a");
  r.parallel_tool_calls = true;
  EXPECT_EQ(run(ToolCallReader(plan_tool_calls(&r, ToolSyntax::kHermes)), two, 9).second.calls.size(), 2u);
}

TEST(ToolCallReader, TextThatOnlyLooksLikeACallIsContentInTheEnd) {
  ToolCallPlan plan;
  plan.active = true;
  plan.syntax = ToolSyntax::kHermes;
  for (const std::string& text : {std::string("a <tool_ca"), std::string("x <tool_call>{not json"), std::string("plain")}) {
    for (size_t step : {1u, 4u}) {
      auto [streamed, reply] = run(ToolCallReader(plan), text, step);
      EXPECT_TRUE(reply.calls.empty()) << text;
      EXPECT_EQ(streamed + reply.content, text);
    }
  }
}

TEST(ToolCallReader, ForcedCallIsRebuiltFromItsPrefix) {
  CompletionRequest r = chat_with_tools(ToolChoice::kRequired);
  const ToolCallPlan plan = plan_tool_calls(&r, ToolSyntax::kMistral);
  auto [streamed, reply] = run(ToolCallReader(plan), "get_weather\", \"arguments\": {\"city\": \"Oslo\"}", 5);
  EXPECT_EQ(streamed, "");
  ASSERT_EQ(reply.calls.size(), 1u);
  EXPECT_EQ(reply.calls[0].name, "get_weather");
  EXPECT_EQ(reply.calls[0].arguments, "{\"city\": \"Oslo\"}");  // as written
  // Cut short (max_tokens) inside the arguments: the call as far as it got.
  auto [s2, cut] = run(ToolCallReader(plan), "get_weather\", \"arguments\": {\"ci", 5);
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.calls[0].arguments, "{\"ci");
  // Cut before the function was known: what the model wrote, as content.
  auto [s3, early] = run(ToolCallReader(plan), "get_wea", 5);
  EXPECT_TRUE(early.calls.empty());
  EXPECT_EQ(early.content, "get_wea");
}

// Streamed, a forced call goes out as it is written: id and name once the function is
// known, then the arguments in pieces that add up to the whole response's string.
TEST(ToolCallReader, ForcedCallStreamsItsArguments) {
  CompletionRequest r = chat_with_tools(ToolChoice::kRequired);
  const ToolCallPlan plan = plan_tool_calls(&r, ToolSyntax::kHermes);
  const std::string text = "get_time\", \"arguments\":  {\"tz\": \"UTC\"}";
  for (size_t step : {1u, 4u, 100u}) {
    ToolCallReader reader(plan);
    std::vector<CallDelta> deltas;
    for (size_t i = 0; i < text.size(); i += step) {
      EXPECT_EQ(reader.push(text.substr(i, step)), "");
      if (auto d = reader.take_call_delta()) deltas.push_back(*d);
    }
    ASSERT_FALSE(deltas.empty());
    EXPECT_TRUE(deltas[0].first);
    EXPECT_EQ(deltas[0].name, "get_time");
    std::string args;
    for (size_t i = 0; i < deltas.size(); ++i) {
      EXPECT_EQ(deltas[i].first, i == 0);
      args += deltas[i].arguments;
    }
    EXPECT_EQ(args, "{\"tz\": \"UTC\"}") << step;
    const chat::ParsedReply reply = reader.finish();
    EXPECT_TRUE(reader.call_streamed());
    ASSERT_EQ(reply.calls.size(), 1u);
    EXPECT_EQ(reply.calls[0].id, deltas[0].id);
    EXPECT_EQ(reply.calls[0].arguments, args);
  }
}

TEST(ToolCallReader, InactivePassesEverythingThrough) {
  ToolCallReader reader;
  EXPECT_EQ(reader.push("<tool_call>"), "<tool_call>");
  const chat::ParsedReply reply = reader.finish();
  EXPECT_TRUE(reply.calls.empty());
  EXPECT_EQ(reply.content, "");
}

TEST(ToolCallIds, FreshAndWellFormed) {
  const std::string a = make_call_id(), b = make_call_id();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), 29u);
  EXPECT_EQ(a.rfind("call_", 0), 0u);
}

}  // namespace
}  // namespace keel::server
