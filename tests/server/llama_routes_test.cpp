// POST /completion (llama-server's own route) over loopback against the scripted fake
// service: the request reaches the engine as llama-server would run it, and the reply has
// llama-server's shape, whole and streamed. No assertion depends on speed.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "http_fixture.h"

namespace keel::server {
namespace {

using engine::FinishReason;
using test::ScriptedSource;

class LlamaRouteTest : public HttpServerTest {};

TEST_F(LlamaRouteTest, WholeReplyHasLlamaServersFields) {
  start();
  auto src = script_next();
  engine::Usage usage{6, 2, 0};
  src->push(ScriptedSource::delta("Hel", {72}));
  src->push(ScriptedSource::delta("lo\n", {108}));
  engine::Event fin = ScriptedSource::finish(FinishReason::kStop, usage);
  fin.stop_word = "END";
  src->push(fin);
  int status = 0;
  const json j = post_json("/completion", R"({"prompt":"Once","n_predict":8,"stop":["END"],"return_tokens":true})", &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["content"], "Hello\n");
  EXPECT_EQ(j["stop"], true);
  EXPECT_EQ(j["stop_type"], "word");
  EXPECT_EQ(j["stopping_word"], "END");
  EXPECT_EQ(j["tokens"], json::array({72, 108}));
  EXPECT_EQ(j["tokens_predicted"], 2);
  EXPECT_EQ(j["tokens_evaluated"], 6);
  EXPECT_EQ(j["tokens_cached"], 7);
  EXPECT_EQ(j["prompt"], "Once");
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["has_new_line"], true);
  EXPECT_EQ(j["generation_settings"]["n_predict"], 8);
  EXPECT_EQ(j["timings"]["predicted_n"], 2);
  EXPECT_FALSE(j.contains("choices")) << j.dump();
  // What the engine was asked: llama-server's sampler defaults where the request is silent.
  std::lock_guard<std::mutex> lock(service_->mutex_);
  const engine::Request& r = service_->last_request;
  EXPECT_EQ(r.max_tokens, 8);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.8f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.95f);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_EQ(r.prompt, (std::vector<int32_t>{1, 'O', 'n', 'c', 'e'}));
}

TEST_F(LlamaRouteTest, StopTypesAndUnlimitedPrediction) {
  start();
  struct Case {
    FinishReason reason;
    const char* stop_word;
    const char* type;
  } cases[] = {{FinishReason::kStop, "", "eos"}, {FinishReason::kLength, "", "limit"}};
  for (const Case& c : cases) {
    auto src = script_next();
    src->push(ScriptedSource::delta("a", {97}));
    engine::Event fin = ScriptedSource::finish(c.reason, engine::Usage{3, 1, 0});
    fin.stop_word = c.stop_word;
    src->push(fin);
    int status = 0;
    // No n_predict: no limit (llama-server's -1), unlike /v1/completions' 16.
    const json j = post_json("/completion", R"({"prompt":[1,2,3],"temperature":0,"seed":-1})", &status);
    ASSERT_EQ(status, 200) << j.dump();
    EXPECT_EQ(j["stop_type"], c.type);
    EXPECT_EQ(j["tokens"], json::array());  // return_tokens not asked
    EXPECT_EQ(j["prompt"], std::string("\x01\x02\x03"));
    std::lock_guard<std::mutex> lock(service_->mutex_);
    EXPECT_EQ(service_->last_request.max_tokens, -1);
    EXPECT_FLOAT_EQ(service_->last_request.sampling.temperature, 0.0f);
  }
}

TEST_F(LlamaRouteTest, StreamSendsPiecesThenTheWholeObjectWithoutDone) {
  start();
  auto src = script_next();
  src->push(ScriptedSource::delta("Hel", {72}));
  src->push(ScriptedSource::delta("lo", {108}));
  src->push(ScriptedSource::finish(FinishReason::kLength, engine::Usage{5, 2, 0}));
  auto c = client();
  auto res = c.Post("/completion", R"({"prompt":"Once","n_predict":2,"stream":true})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::vector<json> events;
  std::istringstream in(res->body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("data: ", 0) == 0) events.push_back(json::parse(line.substr(6)));
  }
  EXPECT_EQ(res->body.find("[DONE]"), std::string::npos) << res->body;
  ASSERT_EQ(events.size(), 3u) << res->body;
  EXPECT_EQ(events[0]["content"], "Hel");
  EXPECT_EQ(events[0]["stop"], false);
  EXPECT_EQ(events[0]["tokens_predicted"], 1);
  EXPECT_EQ(events[1]["content"], "lo");
  EXPECT_EQ(events[1]["tokens_predicted"], 2);
  EXPECT_EQ(events[1]["tokens_evaluated"], 5);
  EXPECT_EQ(events[2]["content"], "");
  EXPECT_EQ(events[2]["stop"], true);
  EXPECT_EQ(events[2]["stop_type"], "limit");
  EXPECT_EQ(events[2]["tokens_predicted"], 2);
  EXPECT_TRUE(events[2].contains("timings"));
}

TEST_F(LlamaRouteTest, ProbabilitiesAndLogitBiasPairs) {
  start();
  auto src = script_next();
  engine::Event d = ScriptedSource::delta("H", {72});
  engine::TokenLogprob lp;
  lp.token = 72;
  lp.text = "H";
  lp.logprob = -0.5f;
  lp.top = {{72, -0.5f}, {300, -1.5f}};
  d.logprobs = {lp};
  src->push(d);
  src->push(ScriptedSource::finish(FinishReason::kStop, engine::Usage{2, 1, 0}));
  int status = 0;
  const json j =
      post_json("/completion", R"({"prompt":"x","n_probs":2,"logit_bias":[[13,false],[14,2.5]]})", &status);
  ASSERT_EQ(status, 200) << j.dump();
  ASSERT_EQ(j["completion_probabilities"].size(), 1u) << j.dump();
  const json& p = j["completion_probabilities"][0];
  EXPECT_EQ(p["id"], 72);
  EXPECT_EQ(p["token"], "H");
  EXPECT_EQ(p["bytes"], json::array({72}));
  ASSERT_EQ(p["top_logprobs"].size(), 2u);
  EXPECT_EQ(p["top_logprobs"][1]["id"], 300);
  EXPECT_EQ(p["top_logprobs"][1]["token"], "<300>");
  std::lock_guard<std::mutex> lock(service_->mutex_);
  const auto& s = service_->last_request.sampling;
  EXPECT_EQ(s.top_logprobs, 2);
  ASSERT_EQ(s.logit_bias.size(), 2u);
  EXPECT_EQ(s.logit_bias[0], (std::pair<int32_t, float>{13, -100.0f}));
  EXPECT_EQ(s.logit_bias[1], (std::pair<int32_t, float>{14, 2.5f}));
}

// json_schema constrains the output as response_format json_schema does on /v1; typical_p
// and repeat_last_n reach the sampler.
TEST_F(LlamaRouteTest, JsonSchemaAndSamplerFields) {
  start();
  int status = 0;
  const json j = post_json("/completion",
                           R"({"prompt":"x","json_schema":{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}},)"
                           R"("typical_p":0.5,"repeat_last_n":-1,"n_predict":0})",
                           &status);
  ASSERT_EQ(status, 200) << j.dump();
  std::lock_guard<std::mutex> lock(service_->mutex_);
  const engine::Request& r = service_->last_request;
  EXPECT_TRUE(r.json_object);
  ASSERT_NE(r.json_constraint.schema, nullptr);
  EXPECT_FLOAT_EQ(r.sampling.typical_p, 0.5f);
  EXPECT_EQ(r.sampling.penalty_last_n, -1);
  EXPECT_EQ(r.max_tokens, 0);
}

TEST_F(LlamaRouteTest, WhatKeelCannotDoIsA400AndTheServerStaysUp) {
  start();
  for (const char* body : {R"({"prompt":"x","grammar":"root ::= \"a\""})", R"({"prompt":"x","mirostat":2})",
                           R"({"prompt":"x","dry_multiplier":0.8})", R"({"prompt":["a","b"]})", R"({"n_predict":4})",
                           R"({"prompt":"x","logit_bias":[["Hello",-1]]})", R"({"prompt":"x","n_probs":99})",
                           R"({"prompt":"x","n_predict":"many"})", R"({"prompt":"x","typical_p":0})", "[1,2]"}) {
    int status = 0;
    const json j = post_json("/completion", body, &status);
    EXPECT_EQ(status, 400) << body << " -> " << j.dump();
    EXPECT_TRUE(j.contains("error")) << body;
  }
  // Knobs that only tune llama-server's slots are accepted; a list of one prompt is that prompt.
  int status = 0;
  const json ok = post_json(
      "/completion", R"({"prompt":["Hi"],"cache_prompt":true,"id_slot":0,"n_keep":4,"samplers":["top_k"],"mirostat":0})",
      &status);
  EXPECT_EQ(status, 200) << ok.dump();
  EXPECT_EQ(ok["content"], "Hello");
}

// /infill: the fill-in-the-middle prompt from the editor's fields (context chunks first,
// the started middle last), fitted as llama-server fits it, then run as /completion.
TEST_F(LlamaRouteTest, InfillBuildsTheFimPromptAndRunsAsCompletion) {
  start();
  int status = 0;
  const json j = post_json("/infill",
                           R"({"input_prefix":"ab","input_suffix":"cd","input_extra":[{"filename":"f.py","text":"xy"}],)"
                           R"("prompt":"m","n_predict":3,"temperature":0})",
                           &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["content"], "Hello");
  EXPECT_EQ(j["stop"], true);
  {
    std::lock_guard<std::mutex> lock(service_->mutex_);
    EXPECT_EQ(service_->last_request.prompt,
              (std::vector<int32_t>{1, 'x', 'y', 500, 'a', 'b', 501, 'c', 'd', 502, 'm'}));
    EXPECT_EQ(service_->last_request.max_tokens, 3);
  }
  // n_ctx 256: B = 128; prefix 96, suffix 32 - 2 - |"m"| = 29, context 256 - 128 - 2 * 3 = 122.
  EXPECT_EQ(service_->last_fim_budgets, (std::array<int64_t, 3>{96, 29, 122}));
  for (const char* body : {R"({"input_prefix":5})", R"({"input_extra":{"text":"x"}})", R"({"input_extra":[{"text":1}]})",
                           R"({"input_extra":[{"text":"x","filename":2}]})"}) {
    const json e = post_json("/infill", body, &status);
    EXPECT_EQ(status, 400) << body << " -> " << e.dump();
  }
}

// /apply-template: the prompt a chat request renders to, as text; nothing is generated.
TEST_F(LlamaRouteTest, ApplyTemplateRendersWithoutGenerating) {
  start();
  int status = 0;
  const json j = post_json("/apply-template",
                           R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]})",
                           &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["prompt"], "system: Be brief.\nuser: Hi\n");
  EXPECT_EQ(service_->submitted.load(), 0);
  const json bad = post_json("/apply-template", R"({"messages":[]})", &status);
  EXPECT_EQ(status, 400) << bad.dump();
  EXPECT_EQ(bad["error"]["param"], "messages");
}

}  // namespace
}  // namespace keel::server
