// The HTTP server end to end over loopback, against a scripted fake service: routes,
// errors, auth, limits, SSE framing, heartbeats during a silent prefill, a disconnect
// cancelling its request, and graceful shutdown. No assertion depends on speed.
#include <gtest/gtest.h>
#include <httplib.h>

#include <string>
#include <thread>
#include <vector>

#include "http_fixture.h"
#include "raw_http.h"

namespace keel::server {
namespace {

using test::RawConnection;
using test::ScriptedSource;
using test::SharedSource;
using engine::FinishReason;

const std::string kChat = R"({"model":"x","messages":[{"role":"user","content":"hi"}],"max_tokens":4})";

TEST_F(HttpServerTest, HealthIs503WhileLoadingThen200) {
  start({}, /*ready=*/false);
  auto c = client();
  auto r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "loading");
  int status = 0;
  post_json("/v1/chat/completions", kChat, &status);
  EXPECT_EQ(status, 503);
  server_->set_service(service_);
  r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, NonStreamingChatAndCompletion) {
  start();
  int status = 0;
  json j = post_json("/v1/chat/completions", kChat, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  // llama-server's timings beside the usage, with the same counts.
  ASSERT_TRUE(j.contains("timings")) << j.dump();
  EXPECT_EQ(j["timings"]["predicted_n"], 2);
  EXPECT_EQ(j["timings"]["prompt_n"].get<int64_t>() + j["timings"]["cache_n"].get<int64_t>(),
            j["usage"]["prompt_tokens"].get<int64_t>());
  for (const char* k : {"prompt_ms", "predicted_ms", "prompt_per_second", "predicted_per_second"})
    EXPECT_GE(j["timings"][k].get<double>(), 0.0) << k;
  j = post_json("/v1/completions", R"({"prompt":"Once","max_tokens":3,"seed":7})", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "Hello");
  std::lock_guard<std::mutex> lock(service_->mutex_);
  EXPECT_EQ(service_->last_request.sampling.seed, 7u);
  EXPECT_EQ(service_->last_request.max_tokens, 3);
  EXPECT_EQ(service_->last_request.prompt, (std::vector<int32_t>{1, 'O', 'n', 'c', 'e'}));
}

TEST_F(HttpServerTest, StreamFramingMatchesOpenAI) {
  start();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.ok());
  const std::string body = R"({"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}})";
  ASSERT_TRUE(conn.send(test::post_request("/v1/chat/completions", body)));
  const std::string& got = conn.read_until("data: [DONE]\n\n");
  ASSERT_NE(got.find("data: [DONE]"), std::string::npos) << got;
  EXPECT_NE(got.find("Content-Type: text/event-stream"), std::string::npos);
  // Decode the chunked body's SSE events in order.
  std::vector<json> events;
  for (size_t p = got.find("data: {"); p != std::string::npos; p = got.find("data: {", p + 1)) {
    const size_t end = got.find("\n\n", p);
    events.push_back(json::parse(got.substr(p + 6, end - p - 6)));
  }
  ASSERT_EQ(events.size(), 5u) << got;  // role, "Hel", "lo", finish, usage
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(events[1]["choices"][0]["delta"]["content"], "Hel");
  EXPECT_EQ(events[2]["choices"][0]["delta"]["content"], "lo");
  EXPECT_EQ(events[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(events[4]["choices"].empty());
  EXPECT_EQ(events[4]["usage"]["completion_tokens"], 2);
  EXPECT_EQ(events[4]["timings"]["predicted_n"], 2);  // on the last chunk only
  for (size_t i = 0; i < 4; ++i) EXPECT_FALSE(events[i].contains("timings")) << i;
  for (const json& e : events) EXPECT_EQ(e["id"], events[0]["id"]);
}

// Without include_usage the timings ride on the finish chunk, the stream's last.
TEST_F(HttpServerTest, StreamTimingsOnTheFinishChunkWithoutUsage) {
  start();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.ok());
  const std::string body = R"({"messages":[{"role":"user","content":"hi"}],"stream":true})";
  ASSERT_TRUE(conn.send(test::post_request("/v1/chat/completions", body)));
  const std::string& got = conn.read_until("data: [DONE]\n\n");
  std::vector<json> events;
  for (size_t p = got.find("data: {"); p != std::string::npos; p = got.find("data: {", p + 1)) {
    const size_t end = got.find("\n\n", p);
    events.push_back(json::parse(got.substr(p + 6, end - p - 6)));
  }
  ASSERT_EQ(events.size(), 4u) << got;  // role, "Hel", "lo", finish
  EXPECT_EQ(events[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(events[3]["timings"]["predicted_n"], 2);
  EXPECT_FALSE(events[3].contains("usage"));
}

TEST_F(HttpServerTest, HarmonyRepliesSplitIntoReasoningAndContent) {
  start();
  service_->harmony = true;
  const std::vector<std::string> pieces = {"<|channel|>anal", "ysis<|message|>Think", "ing.<|end|><|start|>assistant<|chan",
                                           "nel|>final<|message|>Hi", "!"};
  auto script = [&] {
    auto source = script_next();
    for (const std::string& p : pieces) source->push(ScriptedSource::delta(p));
    source->push(ScriptedSource::finish(FinishReason::kStop, {3, 5, 0}));
  };
  script();
  int status = 0;
  json j = post_json("/v1/chat/completions", kChat, &status);
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hi!");
  EXPECT_EQ(j["choices"][0]["message"]["reasoning_content"], "Thinking.");
  {
    std::lock_guard<std::mutex> lock(service_->mutex_);
    EXPECT_TRUE(service_->last_request.render_special_tokens);  // the markers reach the reader
  }

  script();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn.send(test::post_request("/v1/chat/completions",
                                           R"({"messages":[{"role":"user","content":"hi"}],"stream":true})")));
  const std::string& got = conn.read_until("data: [DONE]\n\n");
  std::string content, reasoning;
  for (size_t p = got.find("data: {"); p != std::string::npos; p = got.find("data: {", p + 1)) {
    const json e = json::parse(got.substr(p + 6, got.find("\n\n", p) - p - 6));
    const json& d = e["choices"][0]["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
  }
  EXPECT_EQ(content, "Hi!") << got;
  EXPECT_EQ(reasoning, "Thinking.") << got;

  // Plain completions are not chat: the text is the engine's, untouched.
  script();
  j = post_json("/v1/completions", R"({"prompt":"Once","max_tokens":3})", &status);
  ASSERT_EQ(status, 200);
  std::string all;
  for (const std::string& p : pieces) all += p;
  EXPECT_EQ(j["choices"][0]["text"], all);
  std::lock_guard<std::mutex> lock(service_->mutex_);
  EXPECT_FALSE(service_->last_request.render_special_tokens);
}

TEST_F(HttpServerTest, SilentPrefillStreamsHeartbeatsThenTheText) {
  start();
  auto source = script_next();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.send(test::post_request("/v1/completions", R"({"prompt":"long","stream":true})")));
  // Headers go out at once, then heartbeats while the engine stays silent.
  conn.read_until_count(": keep-alive\n\n", 2);
  EXPECT_NE(conn.received().find("HTTP/1.1 200"), std::string::npos);
  ASSERT_GE(test::count_of(conn.received(), ": keep-alive"), 2u) << conn.received();
  EXPECT_EQ(conn.received().find("data: {"), std::string::npos);  // no chunk before the text
  EXPECT_FALSE(source->cancelled());
  source->push(ScriptedSource::delta("Once upon a time"));
  source->push(ScriptedSource::finish(FinishReason::kStop, {4, 4, 0}));
  const std::string& got = conn.read_until("data: [DONE]\n\n");
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got;
  EXPECT_NE(got.find("\"text\":\"Once upon a time\""), std::string::npos) << got;
  EXPECT_NE(got.find("\"finish_reason\":\"stop\""), std::string::npos);
  EXPECT_FALSE(source->cancelled());
}

TEST_F(HttpServerTest, ClientGoneDuringPrefillCancelsTheRequest) {
  start();
  auto source = script_next();
  {
    RawConnection conn(port_);
    ASSERT_TRUE(conn.send(test::post_request("/v1/completions", R"({"prompt":"x","stream":true})")));
    conn.read_until(": keep-alive\n\n");
  }  // closed: the next heartbeat writes fail
  EXPECT_TRUE(eventually([&] { return source->cancelled(); }));
  auto c = client();
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body.find("keel_client_disconnects_total 0"), std::string::npos) << m->body;
}

TEST_F(HttpServerTest, EngineErrorIs500OrAnSseErrorEvent) {
  start();
  auto source = script_next();
  source->push(ScriptedSource::finish(FinishReason::kError, {}, "injected fault in step 3"));
  int status = 0;
  json j = post_json("/v1/chat/completions", kChat, &status);
  EXPECT_EQ(status, 500);
  EXPECT_NE(j["error"]["message"].get<std::string>().find("injected fault"), std::string::npos);

  source = script_next();
  source->push(ScriptedSource::delta("partial"));
  source->push(ScriptedSource::finish(FinishReason::kError, {}, "boom"));
  RawConnection conn(port_);
  ASSERT_TRUE(conn.send(test::post_request("/v1/chat/completions",
                                           R"({"messages":[{"role":"user","content":"hi"}],"stream":true})")));
  const std::string& got = conn.read_until("boom");
  EXPECT_NE(got.find("data: {\"error\":"), std::string::npos) << got;
  EXPECT_EQ(got.find("[DONE]"), std::string::npos);
  // The server keeps serving.
  auto c = client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// n choices: one failing fails the response (500, or an SSE error event) and the others
// are cancelled, not left running.
TEST_F(HttpServerTest, OneFailedChoiceFailsTheResponseAndCancelsTheOthers) {
  start();
  for (bool stream : {false, true}) {
    std::vector<std::shared_ptr<ScriptedSource>> sources;
    service_->on_submit = [&sources](engine::Request) {
      sources.push_back(std::make_shared<ScriptedSource>());
      if (sources.size() == 2) sources.back()->push(ScriptedSource::finish(FinishReason::kError, {}, "choice two broke"));
      return std::make_unique<SharedSource>(sources.back());
    };
    const std::string body = std::string(R"({"messages":[{"role":"user","content":"hi"}],"n":3)") +
                              (stream ? R"(,"stream":true})" : "}");
    if (!stream) {
      int status = 0;
      const json j = post_json("/v1/chat/completions", body, &status);
      EXPECT_EQ(status, 500);
      EXPECT_NE(j["error"]["message"].get<std::string>().find("choice two broke"), std::string::npos);
    } else {
      RawConnection conn(port_);
      ASSERT_TRUE(conn.send(test::post_request("/v1/chat/completions", body)));
      const std::string& got = conn.read_until("choice two broke");
      EXPECT_NE(got.find("data: {\"error\":"), std::string::npos) << got;
      EXPECT_EQ(got.find("[DONE]"), std::string::npos);
    }
    ASSERT_EQ(sources.size(), 3u);
    EXPECT_TRUE(eventually([&] { return sources[0]->cancelled() && sources[2]->cancelled(); }));
  }
}

TEST_F(HttpServerTest, BadRequestsGetTheirStatusAndTheServerStaysUp) {
  ServerOptions o;
  o.max_body_bytes = 4096;
  start(o);
  struct Case {
    std::string path, body;
    int status;
    std::string code;
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", "{not json", 400, "invalid_json"},
      {"/v1/chat/completions", "{\"messages\":\"\xC3\x28\"}", 400, "invalid_utf8"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"n":99})", 400, "invalid_value"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}],"temperature":9})", 400, "invalid_value"},
      {"/v1/completions", R"({"prompt":[1,2,99999]})", 400, "invalid_value"},
      {"/v1/completions", R"({"prompt":")" + std::string(300, 'a') + R"("})", 400, "context_length_exceeded"},
      {"/v1/completions", R"({"prompt":")" + std::string(5000, 'a') + R"("})", 413, "request_too_large"},
      {"/v1/nothing", "{}", 404, "not_found"},
      {"/tokenize", R"({"content":5})", 400, "invalid_type"},
      {"/detokenize", R"({"tokens":[1,-1]})", 400, "invalid_value"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body.substr(0, 60));
    int status = 0;
    const json j = post_json(c.path, c.body, &status);
    EXPECT_EQ(status, c.status);
    ASSERT_TRUE(j.contains("error")) << dump(j);
    EXPECT_EQ(j["error"]["code"], c.code);
    EXPECT_TRUE(j["error"].contains("param"));
    EXPECT_TRUE(j["error"].contains("type"));
  }
  // Garbage on the wire.
  for (const std::string& raw : {std::string("GARBAGE\r\n\r\n"), std::string("GET /health HTTP/9.9\r\n\r\n"),
                                std::string("\x00\x01\x02\r\n\r\n", 7)}) {
    RawConnection conn(port_);
    conn.send(raw);
    // httplib answers 400 and closes; the bound is only against a hang.
    EXPECT_EQ(conn.read_until("\r\n\r\n", std::chrono::seconds(20)).rfind("HTTP/1.1 400", 0), 0u) << raw;
  }
  EXPECT_EQ(service_->submitted.load(), 0);
  auto c = client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST_F(HttpServerTest, BusyEngineIs429) {
  start();
  service_->on_submit = [](engine::Request) -> std::unique_ptr<EventSource> {
    throw Error(ErrorCode::kBusy, "queue full (4 in flight)");
  };
  int status = 0;
  const json j = post_json("/v1/chat/completions", kChat, &status);
  EXPECT_EQ(status, 429);
  EXPECT_EQ(j["error"]["type"], "rate_limit_error");
}

// Prompts x n beyond --parallel + --queue (4 here) could never run: a 400, not a 429.
TEST_F(HttpServerTest, MoreGenerationsThanTheServerTakesIsA400) {
  start();
  int status = 0;
  json j = post_json("/v1/completions", R"({"prompt": ["a", "b", "c"], "n": 2, "max_tokens": 2})", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(j["error"]["param"], "prompt");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("at most 4 at once"), std::string::npos) << j.dump();
  j = post_json("/v1/completions", R"({"prompt": ["a", "b"], "n": 2, "max_tokens": 2})", &status);
  EXPECT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["choices"].size(), 4u);
}

TEST_F(HttpServerTest, ApiKeyGuardsEveryRouteButHealth) {
  ServerOptions o;
  o.api_key = "sekret";
  start(o);
  auto c = client();
  auto r = c.Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
  r = c.Get("/metrics", {{"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/props");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/v1/models", {{"Authorization", "Bearer sekret"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "fake-model");
  r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // llama-server's spellings: /v1/health is open too; /models is not; X-Api-Key is a key.
  r = c.Get("/v1/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Get("/models", {{"X-Api-Key", "sekret"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/models", {{"X-Api-Key", "wrong"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  r = c.Post("/chat/completions", kChat, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
}

// Browsers: an allowed origin gets CORS headers on every response (errors and 401s
// included) and its preflight answered before the key check; another origin gets neither
// the headers nor a preflight, but its request still runs (a proxied web app sends its own
// origin); requests without Origin are untouched.
TEST_F(HttpServerTest, CorsForAllowedOriginsOnly) {
  ServerOptions o;
  o.api_key = "sekret";
  o.cors_origins = {"loopback", "https://app.example.com"};
  start(o);
  auto c = client();
  const httplib::Headers key = {{"Authorization", "Bearer sekret"}};
  auto r = c.Options("/v1/chat/completions", {{"Origin", "https://app.example.com"},
                                              {"Access-Control-Request-Method", "POST"},
                                              {"Access-Control-Request-Headers", "authorization, content-type"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example.com");
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type");
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);

  r = c.Options("/v1/chat/completions", {{"Origin", "https://evil.example.com"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "cors_origin_not_allowed");
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));

  httplib::Headers h = key;
  h.emplace("Origin", "http://localhost:5173");
  r = c.Get("/v1/models", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "http://localhost:5173");
  r = c.Get("/v1/models", {{"Origin", "http://localhost:5173"}});  // no key: the 401 is readable
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "http://localhost:5173");

  h = key;
  h.emplace("Origin", "https://evil.example.com");
  r = c.Get("/v1/models", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  r = c.Get("/v1/models", key);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
}

TEST_F(HttpServerTest, InfoRoutes) {
  start();
  auto c = client();
  auto r = c.Get("/v1/models/fake-model");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.Get("/v1/models/other");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  // llama-server also serves these without the /v1 prefix.
  r = c.Get("/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "fake-model");
  r = c.Get("/models/fake-model");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  {
    int st = 0;
    json j = post_json("/chat/completions", kChat, &st);
    EXPECT_EQ(st, 200);
    EXPECT_EQ(j["object"], "chat.completion");
    j = post_json("/completions", R"({"prompt":"Once","max_tokens":3})", &st);
    EXPECT_EQ(st, 200);
    EXPECT_EQ(j["object"], "text_completion");
  }
  r = c.Get("/props");  // llama-server's, as its web UI reads it
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const json props = json::parse(r->body);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 256);
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["model_path"], "fake-model");
  EXPECT_EQ(props["modalities"]["vision"], false);
  r = c.Get("/slots");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)[1]["state"], "generating");
  int status = 0;
  json j = post_json("/tokenize", R"({"content":"ab","add_special":true})", &status);
  EXPECT_EQ(j["tokens"], json::array({1, 'a', 'b'}));
  j = post_json("/tokenize", R"({"content":"a","with_pieces":true})", &status);
  EXPECT_EQ(j["tokens"][0]["piece"], "a");
  j = post_json("/detokenize", R"({"tokens":[104,105]})", &status);
  EXPECT_EQ(j["content"], "hi");
  r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("keel_queue_depth 1"), std::string::npos);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/plain"), std::string::npos);
}

TEST_F(HttpServerTest, OptInHeartbeatForNonStreamingRequests) {
  start();
  auto source = script_next();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.send(test::post_request("/v1/chat/completions", kChat, "X-Keel-Heartbeat: 1\r\n")));
  conn.read_until("HTTP/1.1 200");
  conn.read_until("\r\n\r\n");
  conn.read_until_count("\r\n \r\n", 3);  // three one-space chunks
  EXPECT_GE(test::count_of(conn.received(), "\r\n \r\n"), 3u) << conn.received();
  source->push(ScriptedSource::delta("ok"));
  source->push(ScriptedSource::finish(FinishReason::kStop));
  const std::string& got = conn.read_until("\"usage\"");
  EXPECT_NE(got.find("\"content\":\"ok\""), std::string::npos) << got;
}

TEST_F(HttpServerTest, ShutdownLetsInFlightFinishThenCancelsTheRest) {
  start();
  auto source = script_next();
  RawConnection conn(port_);
  ASSERT_TRUE(conn.send(test::post_request("/v1/completions", R"({"prompt":"x","stream":true})")));
  conn.read_until(": keep-alive");
  server_->shutdown(std::chrono::milliseconds(50));  // the source never finishes by itself
  EXPECT_TRUE(source->cancelled());
  thread_.join();  // run() returned
  const std::string& got = conn.read_until("cancelled");
  EXPECT_NE(got.find("\"code\":\"cancelled\""), std::string::npos) << got;
}

}  // namespace
}  // namespace keel::server

namespace keel::server {
namespace {

// A signal can arrive while the server is still starting: shutdown() before or while
// run() begins must still make run() return (the test would hang otherwise).
TEST(HttpServerLifecycle, ShutdownBeforeOrDuringRunStartMakesRunReturn) {
  ServerOptions o;
  o.port = 0;
  {
    HttpServer s(o);
    s.bind();
    s.shutdown(std::chrono::milliseconds(0));
    s.run();
  }
  for (int i = 0; i < 20; ++i) {
    HttpServer s(o);
    s.bind();
    std::thread t([&] { s.run(); });
    if (i % 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    s.shutdown(std::chrono::milliseconds(0));
    t.join();
  }
}

}  // namespace
}  // namespace keel::server
