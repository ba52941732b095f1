// POST /v1/messages (Anthropic's Messages API) over loopback against the scripted fake
// service: the request reaches the engine as the chat request it stands for (system first,
// tool_use / tool_result as the call and the tool turn), the reply is a `message` with
// Anthropic's stop reasons, a stream is its event sequence, and what keel cannot do is a
// 400. No assertion depends on speed.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "http_fixture.h"

namespace keel::server {
namespace {

using engine::FinishReason;
using test::ScriptedSource;

class AnthropicRouteTest : public HttpServerTest {
 protected:
  static std::pair<std::vector<std::string>, std::vector<json>> events(const std::string& body) {
    SseEvents e = sse_events(body);
    return {std::move(e.names), std::move(e.data)};
  }
};

TEST_F(AnthropicRouteTest, WholeReplyIsAMessage) {
  start();
  auto src = script_next();
  src->push(ScriptedSource::delta("Hi there", {72}));
  engine::Event fin = ScriptedSource::finish(FinishReason::kStop, engine::Usage{9, 3, 4});
  fin.stop_word = "END";
  src->push(fin);
  int status = 0;
  const json j = post_json("/v1/messages",
                           R"({"model":"m","max_tokens":20,"system":[{"type":"text","text":"Be brief."}],)"
                           R"("messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"text","text":"Yo"}]},)"
                           R"({"role":"user","content":[{"type":"text","text":"More"}]}],"stop_sequences":["END"],"top_k":5})",
                           &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  EXPECT_EQ(j["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(j["content"], json::parse(R"([{"type":"text","text":"Hi there"}])"));
  EXPECT_EQ(j["stop_reason"], "stop_sequence");
  EXPECT_EQ(j["stop_sequence"], "END");
  EXPECT_EQ(j["usage"]["input_tokens"], 9);
  EXPECT_EQ(j["usage"]["output_tokens"], 3);
  EXPECT_EQ(j["usage"]["cache_read_input_tokens"], 4);
  std::lock_guard<std::mutex> lock(service_->mutex_);
  const engine::Request& r = service_->last_request;
  EXPECT_EQ(r.max_tokens, 20);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.sampling.top_k, 5);
  const std::string rendered(r.prompt.begin() + 1, r.prompt.end());
  EXPECT_EQ(rendered, "system: Be brief.\nuser: Hi\nassistant: Yo\nuser: More\n");
}

TEST_F(AnthropicRouteTest, StopReasonsAndStream) {
  start();
  struct Case {
    FinishReason reason;
    const char* want;
  } cases[] = {{FinishReason::kStop, "end_turn"}, {FinishReason::kLength, "max_tokens"}};
  for (const Case& c : cases) {
    auto src = script_next();
    src->push(ScriptedSource::delta("Hel", {72}));
    src->push(ScriptedSource::delta("lo", {108}));
    src->push(ScriptedSource::finish(c.reason, engine::Usage{4, 2, 0}));
    auto cl = client();
    auto res = cl.Post("/v1/messages", R"({"max_tokens":2,"stream":true,"messages":[{"role":"user","content":"x"}]})",
                       "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    const auto [names, data] = events(res->body);
    const std::vector<std::string> want = {"message_start", "content_block_start", "content_block_delta",
                                           "content_block_delta", "content_block_stop", "message_delta", "message_stop"};
    ASSERT_EQ(names, want) << res->body;
    for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(data[i]["type"], names[i]);
    EXPECT_EQ(data[0]["message"]["usage"]["input_tokens"], 9);  // the prompt submitted: BOS + "user: x\n"
    EXPECT_EQ(data[2]["delta"]["text"], "Hel");
    EXPECT_EQ(data[3]["delta"]["type"], "text_delta");
    EXPECT_EQ(data[5]["delta"]["stop_reason"], c.want);
    EXPECT_EQ(data[5]["usage"]["output_tokens"], 2);
  }
}

// Tools: a call comes back as a tool_use block (input an object), whole and streamed; the
// next request's tool_use / tool_result blocks become the call and the tool's turn.
TEST_F(AnthropicRouteTest, ToolUseBothWays) {
  start();
  const std::string call_text = "<tool_call>\n{\"name\": \"get\", \"arguments\": {\"x\": 1}}\n</tool_call>";
  const std::string tools = R"("tools":[{"name":"get","description":"d","input_schema":{"type":"object","properties":{"x":{"type":"integer"}}}}])";
  auto script_call = [&] {
    auto src = script_next();
    src->push(ScriptedSource::delta(call_text));
    src->push(ScriptedSource::finish(FinishReason::kStop, engine::Usage{5, 9, 0}));
  };
  script_call();
  int status = 0;
  const json j = post_json("/v1/messages", R"({"max_tokens":50,"messages":[{"role":"user","content":"x"}],)" + tools + "}", &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["stop_reason"], "tool_use");
  ASSERT_EQ(j["content"].size(), 1u) << j.dump();
  EXPECT_EQ(j["content"][0]["type"], "tool_use");
  EXPECT_EQ(j["content"][0]["name"], "get");
  EXPECT_EQ(j["content"][0]["input"], json::parse(R"({"x":1})"));

  script_call();
  auto cl = client();
  auto res = cl.Post("/v1/messages", R"({"max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}],)" + tools + "}",
                     "application/json");
  ASSERT_TRUE(res);
  const auto [names, data] = events(res->body);
  const std::vector<std::string> want = {"message_start", "content_block_start", "content_block_delta",
                                         "content_block_stop", "message_delta", "message_stop"};
  ASSERT_EQ(names, want) << res->body;
  EXPECT_EQ(data[1]["content_block"]["type"], "tool_use");
  EXPECT_EQ(json::parse(data[2]["delta"]["partial_json"].get<std::string>()), json::parse(R"({"x":1})"));
  EXPECT_EQ(data[4]["delta"]["stop_reason"], "tool_use");

  service_->on_submit = nullptr;  // the default reply (the scripted source is spent)
  const std::string next = R"({"max_tokens":5,"messages":[{"role":"user","content":"x"},)"
                           R"({"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"get","input":{"x":1}}]},)"
                           R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"42"}]}],)" + tools + "}";
  const json k = post_json("/v1/messages", next, &status);
  ASSERT_EQ(status, 200) << k.dump();
  std::lock_guard<std::mutex> lock(service_->mutex_);
  const std::string rendered(service_->last_request.prompt.begin() + 1, service_->last_request.prompt.end());
  EXPECT_NE(rendered.find("tool: 42"), std::string::npos) << rendered;
}

// A forced call (tool_choice "tool") streams its input as the model writes it: one
// input_json_delta per piece, which together are the block's input.
TEST_F(AnthropicRouteTest, ForcedToolUseStreamsItsInputAsItIsWritten) {
  start();
  script_pieces({"{\"x\"", ": 1}"}, engine::Usage{5, 4, 0});
  const std::string body = R"({"max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}],)"
                           R"("tools":[{"name":"get","input_schema":{"type":"object","properties":{"x":{"type":"integer"}}}}],)"
                           R"("tool_choice":{"type":"tool","name":"get"}})";
  auto cl = client();
  auto res = cl.Post("/v1/messages", body, "application/json");
  ASSERT_TRUE(res);
  const auto [names, data] = events(res->body);
  const std::vector<std::string> want = {"message_start",       "content_block_start", "content_block_delta",
                                         "content_block_delta", "content_block_stop",  "message_delta",
                                         "message_stop"};
  ASSERT_EQ(names, want) << res->body;
  EXPECT_EQ(data[1]["content_block"]["type"], "tool_use");
  EXPECT_EQ(data[1]["content_block"]["name"], "get");
  EXPECT_EQ(data[2]["delta"]["partial_json"], "{\"x\"");
  const std::string input = data[2]["delta"]["partial_json"].get<std::string>() + data[3]["delta"]["partial_json"].get<std::string>();
  EXPECT_EQ(json::parse(input), json::parse(R"({"x":1})"));
  EXPECT_EQ(data[4]["index"], data[1]["index"]);
  EXPECT_EQ(data[5]["delta"]["stop_reason"], "tool_use");
}

// count_tokens: the prompt the same request would submit, counted; nothing runs.
TEST_F(AnthropicRouteTest, CountTokensCountsThePromptWithoutRunning) {
  start();
  int status = 0;
  const json j = post_json("/v1/messages/count_tokens",
                           R"({"model":"m","system":"S","messages":[{"role":"user","content":"Hi"}]})", &status);
  ASSERT_EQ(status, 200) << j.dump();
  // The fake renders "system: S\nuser: Hi\n" after BOS.
  EXPECT_EQ(j["input_tokens"], 1 + std::string("system: S\nuser: Hi\n").size());
  EXPECT_EQ(service_->submitted.load(), 0);
  const json bad = post_json("/v1/messages/count_tokens", R"({"messages":[]})", &status);
  EXPECT_EQ(status, 400) << bad.dump();
}

TEST_F(AnthropicRouteTest, WhatKeelCannotDoIsA400) {
  start();
  for (const char* body :
       {R"({"messages":[{"role":"user","content":"x"}]})", R"({"max_tokens":5,"messages":[]})",
        R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})",
        R"({"max_tokens":5,"messages":[{"role":"system","content":"x"}]})",
        R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"web_search_20250305","name":"w"}]})",
        R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled","budget_tokens":1024}})",
        R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"temperature":1.5})",
        R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"maybe"}})"}) {
    int status = 0;
    const json j = post_json("/v1/messages", body, &status);
    EXPECT_EQ(status, 400) << body << " -> " << j.dump();
  }
  EXPECT_EQ(service_->submitted.load(), 0);
}

}  // namespace
}  // namespace keel::server
