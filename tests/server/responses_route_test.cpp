// POST /v1/responses over loopback against the scripted fake service: the request reaches
// the engine as the chat request it stands for, the reply is a `response` object, a stream
// is the typed event sequence the official clients accumulate, and what keel cannot do is
// a 400. No assertion depends on speed.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "http_fixture.h"

namespace keel::server {
namespace {

using engine::FinishReason;
using test::ScriptedSource;

class ResponsesRouteTest : public HttpServerTest {};

TEST_F(ResponsesRouteTest, WholeReplyIsAResponseObject) {
  start();
  int status = 0;
  const json j = post_json("/v1/responses",
                           R"({"model":"m","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"Hi"}]},)"
                           R"({"type":"message","role":"assistant","content":"Yo"},{"role":"user","content":"More"}],)"
                           R"("max_output_tokens":7,"temperature":0.5})",
                           &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["instructions"], "Be brief.");
  EXPECT_EQ(j["max_output_tokens"], 7);
  ASSERT_EQ(j["output"].size(), 1u);
  const json& item = j["output"][0];
  EXPECT_EQ(item["type"], "message");
  EXPECT_EQ(item["role"], "assistant");
  EXPECT_EQ(item["content"][0]["type"], "output_text");
  EXPECT_EQ(item["content"][0]["text"], "Hello");
  EXPECT_EQ(j["usage"]["output_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["input_tokens"].get<int64_t>() + 2);
  std::lock_guard<std::mutex> lock(service_->mutex_);
  const engine::Request& r = service_->last_request;
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  // The fake renders "role: content\n" per message: instructions first, as a system turn.
  const std::string rendered(r.prompt.begin() + 1, r.prompt.end());
  EXPECT_EQ(rendered, "system: Be brief.\nuser: Hi\nassistant: Yo\nuser: More\n");
}

TEST_F(ResponsesRouteTest, CutByMaxOutputTokensIsIncomplete) {
  start();
  auto src = script_next();
  src->push(ScriptedSource::delta("ab", {97, 98}));
  src->push(ScriptedSource::finish(FinishReason::kLength, engine::Usage{3, 2, 0}));
  int status = 0;
  const json j = post_json("/v1/responses", R"({"input":"x","max_output_tokens":2})", &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(j["output"][0]["status"], "incomplete");
}

TEST_F(ResponsesRouteTest, StreamIsTheTypedEventSequence) {
  start();
  auto c = client();
  auto res = c.Post("/v1/responses", R"({"input":"Hi","stream":true})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const auto [names, events] = sse_events(res->body);
  const std::vector<std::string> want = {"response.created", "response.in_progress", "response.output_item.added",
                                         "response.content_part.added", "response.output_text.delta",
                                         "response.output_text.delta", "response.output_text.done",
                                         "response.content_part.done", "response.output_item.done",
                                         "response.completed"};
  ASSERT_EQ(names, want) << res->body;
  ASSERT_EQ(events.size(), want.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["type"], want[i]);
    EXPECT_EQ(events[i]["sequence_number"], static_cast<int64_t>(i));
  }
  EXPECT_EQ(events[4]["delta"], "Hel");
  EXPECT_EQ(events[5]["delta"], "lo");
  EXPECT_EQ(events[6]["text"], "Hello");
  const json& done = events.back()["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(done["id"], events[0]["response"]["id"]);
  EXPECT_EQ(events[0]["response"]["status"], "in_progress");
  EXPECT_EQ(res->body.find("[DONE]"), std::string::npos);
}

TEST_F(ResponsesRouteTest, JsonSchemaFormatConstrainsTheOutput) {
  start();
  int status = 0;
  const json j = post_json("/v1/responses",
                           R"({"input":"x","text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"},"strict":true}}})",
                           &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["text"]["format"]["type"], "json_schema");
  std::lock_guard<std::mutex> lock(service_->mutex_);
  EXPECT_TRUE(service_->last_request.json_object);
  EXPECT_NE(service_->last_request.json_constraint.schema, nullptr);
}

TEST_F(ResponsesRouteTest, WhatKeelCannotDoIsA400) {
  start();
  for (const char* body :
       {R"({"input":"x","tools":[{"type":"web_search"}]})", R"({"input":"x","tools":{"type":"function"}})",
        R"({"input":"x","previous_response_id":"resp_1"})", R"({"input":[{"type":"reasoning","summary":[]}]})",
        R"({"input":[{"type":"function_call","call_id":"c","name":"f"}]})",
        R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"http://x"}]}]})", R"({"instructions":"x"})",
        R"({"input":[]})", R"({"input":[{"role":"tool","content":"x"}]})", R"({"input":"x","max_output_tokens":0})",
        R"({"input":"x","truncation":"auto"})", R"({"input":"x","text":{"format":{"type":"yaml"}}})", R"({"input":5})"}) {
    int status = 0;
    const json j = post_json("/v1/responses", body, &status);
    EXPECT_EQ(status, 400) << body << " -> " << j.dump();
    EXPECT_TRUE(j.contains("error")) << body;
  }
  EXPECT_EQ(service_->submitted.load(), 0);
}

// Function tools: the reply's call becomes a function_call item (whole and streamed), and
// the next request's function_call / function_call_output items become the assistant's
// call and the tool's turn.
TEST_F(ResponsesRouteTest, FunctionCallsBothWays) {
  start();
  const std::string call_text = "<tool_call>\n{\"name\": \"get\", \"arguments\": {\"x\": 1}}\n</tool_call>";
  auto script_call = [&] {
    auto src = script_next();
    src->push(ScriptedSource::delta(call_text));
    src->push(ScriptedSource::finish(FinishReason::kStop, engine::Usage{5, 9, 0}));
  };
  const std::string tools = R"("tools":[{"type":"function","name":"get","description":"d","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}])";
  script_call();
  int status = 0;
  const json j = post_json("/v1/responses", R"({"input":"x",)" + tools + "}", &status);
  ASSERT_EQ(status, 200) << j.dump();
  ASSERT_EQ(j["output"].size(), 1u) << j.dump();
  const json& call = j["output"][0];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "get");
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json::parse(R"({"x":1})"));
  EXPECT_EQ(call["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(j["tools"][0]["name"], "get");

  script_call();
  auto c = client();
  auto res = c.Post("/v1/responses", R"({"input":"x","stream":true,)" + tools + "}", "application/json");
  ASSERT_TRUE(res);
  const auto [names, data] = sse_events(res->body);
  ASSERT_FALSE(data.empty());
  const json& last = data.back();
  const std::vector<std::string> want = {"response.created", "response.in_progress", "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done", "response.output_item.done",
                                         "response.completed"};
  EXPECT_EQ(names, want) << res->body;
  EXPECT_EQ(last["response"]["output"][0]["name"], "get");

  const std::string next = R"({"input":[{"role":"user","content":"x"},)"
                           R"({"type":"function_call","call_id":"call_1","name":"get","arguments":"{\"x\":1}"},)"
                           R"({"type":"function_call_output","call_id":"call_1","output":"42"}],)" + tools + "}";
  service_->on_submit = nullptr;  // the default reply (the scripted source is spent)
  const json k = post_json("/v1/responses", next, &status);
  ASSERT_EQ(status, 200) << k.dump();
  std::lock_guard<std::mutex> lock(service_->mutex_);
  const std::string rendered(service_->last_request.prompt.begin() + 1, service_->last_request.prompt.end());
  EXPECT_NE(rendered.find("tool: 42"), std::string::npos) << rendered;
}

// A forced call (tool_choice naming the function) streams its arguments as the model
// writes them: the item opens at once, one arguments delta per piece, then .done with all.
TEST_F(ResponsesRouteTest, ForcedCallStreamsItsArgumentsAsTheyAreWritten) {
  start();
  script_pieces({"{\"x\"", ": 1}"}, engine::Usage{5, 4, 0});
  const std::string body = R"({"input":"x","stream":true,)"
                           R"("tools":[{"type":"function","name":"get","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}],)"
                           R"("tool_choice":{"type":"function","name":"get"}})";
  auto c = client();
  auto res = c.Post("/v1/responses", body, "application/json");
  ASSERT_TRUE(res);
  const auto [names, data] = sse_events(res->body);
  const std::vector<std::string> want = {"response.created", "response.in_progress", "response.output_item.added",
                                         "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done", "response.output_item.done",
                                         "response.completed"};
  ASSERT_EQ(names, want) << res->body;
  EXPECT_EQ(data[2]["item"]["name"], "get");
  const std::string item_id = data[2]["item"]["id"];
  EXPECT_EQ(data[3]["delta"], "{\"x\"");
  EXPECT_EQ(data[3]["item_id"], item_id);
  const std::string args = data[3]["delta"].get<std::string>() + data[4]["delta"].get<std::string>();
  EXPECT_EQ(data[5]["arguments"], args);
  EXPECT_EQ(data[6]["item"]["id"], item_id);
  EXPECT_EQ(data[6]["item"]["call_id"], data[2]["item"]["call_id"]);
  EXPECT_EQ(json::parse(data[7]["response"]["output"][0]["arguments"].get<std::string>()), json::parse(R"({"x":1})"));
  for (size_t i = 1; i < data.size(); ++i) EXPECT_EQ(data[i]["sequence_number"], data[i - 1]["sequence_number"].get<int>() + 1);
}

}  // namespace
}  // namespace keel::server
