// The production path with a real model (stories260K): EngineService over the engine,
// and HttpServer over EngineService. Greedy output must match the reference
// implementation's tokens; streamed and whole responses must carry the same text; a
// client that leaves mid-stream cancels its request and the next one is unaffected.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "engine/model_backend.h"
#include "raw_http.h"
#include "server/engine_service.h"
#include "server/http_server.h"
#include "support/paths.h"

namespace keel::server {
namespace {

using engine::Event;

std::shared_ptr<EngineService> make_service(chat::ChatFamily family = chat::kFallbackFamily) {
  engine::LoadOptions load;
  load.model_path = keel::test::reference_path("stories260K", "model.gguf");
  load.engine.n_parallel = 2;
  load.engine.n_ctx = 256;
  load.engine.threads = 1;
  engine::LoadedModel loaded = engine::open_model(load);
  EngineServiceParts parts;
  parts.engine = engine::start_engine(loaded, load);
  parts.tokenizer = loaded.tokenizer;
  parts.model_id = "stories260K";
  parts.chat_family = family;
  return std::make_shared<EngineService>(std::move(parts));
}

json reference() {
  std::ifstream in(keel::test::reference_path("stories260K", "generate.json"));
  return json::parse(in);
}

CompletionRequest completion(const std::string& prompt, int max_tokens) {
  CompletionRequest r;
  r.endpoint = Endpoint::kCompletion;
  r.prompts = {{prompt, {}}};
  r.generation.max_tokens = max_tokens;
  r.generation.sampling.temperature = 0.0f;
  return r;
}

// Tokens and text of one request, read through the same pump the routes use.
struct Output {
  std::vector<int32_t> tokens;
  std::string text;
  engine::FinishReason reason = engine::FinishReason::kError;
};

Output run(InferenceService& service, const CompletionRequest& r) {
  engine::Request gen = r.generation;
  gen.prompt = service.prompt_tokens(r);
  auto source = service.submit(std::move(gen));
  Output out;
  auto on_event = [&](const Event& e) {
    out.tokens.insert(out.tokens.end(), e.tokens.begin(), e.tokens.end());
    out.text += e.text;
    if (e.kind == Event::Kind::kFinish) out.reason = e.reason;
    return WriteResult::kNothing;
  };
  EXPECT_EQ(pump_events(*source, {std::chrono::milliseconds(10)}, on_event, [] { return true; }), PumpResult::kFinished);
  return out;
}

class EngineServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { service_ = make_service(); }
  static void TearDownTestSuite() {
    service_->shutdown(std::chrono::milliseconds(0));
    service_.reset();
  }
  static std::shared_ptr<EngineService> service_;
};
std::shared_ptr<EngineService> EngineServiceTest::service_;

TEST_F(EngineServiceTest, GreedyCompletionMatchesTheReferenceTokens) {
  const json ref = reference();
  const CompletionRequest r = completion(ref["prompt"], 16);
  EXPECT_EQ(service_->prompt_tokens(r), ref["prompt_tokens"].get<std::vector<int32_t>>());
  const Output out = run(*service_, r);
  const auto expected = ref["generated_tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(out.tokens.size(), 16u);
  EXPECT_EQ(out.tokens, std::vector<int32_t>(expected.begin(), expected.begin() + 16));
  EXPECT_EQ(out.reason, engine::FinishReason::kLength);
  EXPECT_EQ(ref["generated_text"].get<std::string>().rfind(out.text, 0), 0u) << out.text;
}

TEST_F(EngineServiceTest, InfoTokenizeAndChatPrompt) {
  const ModelInfo info = service_->model_info();
  EXPECT_EQ(info.n_vocab, 512);
  EXPECT_EQ(info.n_ctx, 256);
  const auto ids = service_->tokenize("Once upon a time", true, false);
  EXPECT_EQ(service_->detokenize(ids), "Once upon a time");
  CompletionRequest chat;
  chat.endpoint = Endpoint::kChat;
  ChatMessage hi;
  hi.role = "user";
  hi.content = "Hi";
  chat.messages = {hi};
  const auto tokens = service_->prompt_tokens(chat);
  ASSERT_FALSE(tokens.empty());
  EXPECT_EQ(tokens[0], 1);  // BOS, written by the template, not doubled
  EXPECT_NE(tokens[1], 1);
  // chat_prompt() is that prompt as text: it tokenizes (specials parsed) to the same ids.
  const std::string text = service_->chat_prompt(chat);
  EXPECT_NE(text.find("Hi"), std::string::npos) << text;
  std::vector<int32_t> again = service_->tokenize(text, false, true);
  if (again.empty() || again[0] != 1) again.insert(again.begin(), 1);
  EXPECT_EQ(again, tokens) << text;
}

TEST(EngineServiceHarmony, HarmonyOutputNeedsTheMarkersInTheVocabulary) {
  // --chat-template harmony forced on a model whose vocabulary has no <|channel|> or
  // <|message|>: its replies cannot hold markers, so they are read as plain text (no split,
  // and no control-token text such as "<s>" in the content).
  auto service = make_service(chat::ChatFamily::kHarmony);
  const ModelInfo info = service->model_info();
  EXPECT_EQ(info.chat_template, "harmony");
  EXPECT_FALSE(info.harmony_output);
  service->shutdown(std::chrono::milliseconds(0));
}

class EngineHttpTest : public EngineServiceTest {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.port = 0;
    o.heartbeat_seconds = 0.01;
    o.max_inflight = 4;
    http_ = std::make_unique<HttpServer>(o);
    port_ = http_->bind();
    http_->set_service(service_);
    thread_ = std::thread([this] { http_->run(); });
  }
  void TearDown() override {
    http_->shutdown(std::chrono::milliseconds(1000));
    thread_.join();
  }
  std::string stream_text(const std::string& body) {
    test::RawConnection conn(port_);
    conn.send(test::post_request("/v1/completions", body));
    const std::string& raw = conn.read_until("data: [DONE]\n\n");
    std::string text;
    for (size_t p = raw.find("data: {"); p != std::string::npos; p = raw.find("data: {", p + 1)) {
      const json chunk = json::parse(raw.substr(p + 6, raw.find("\n\n", p) - p - 6));
      for (const json& c : chunk["choices"]) text += c["text"].get<std::string>();
    }
    return text;
  }
  std::string whole_text(const std::string& body) {
    test::RawConnection conn(port_);
    conn.send(test::post_request("/v1/completions", body));
    const std::string& raw = conn.read_until("\"usage\"");
    conn.read_until("}}");
    return json::parse(raw.substr(raw.find("\r\n\r\n") + 4))["choices"][0]["text"];
  }

  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(EngineHttpTest, StreamedAndWholeResponsesCarryTheSameText) {
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0)";
  const std::string streamed = stream_text(body + R"(,"stream":true})");
  const std::string whole = whole_text(body + "}");
  EXPECT_EQ(streamed, whole);
  EXPECT_EQ(reference()["generated_text"].get<std::string>().rfind(whole, 0), 0u) << whole;
  // Sampled with a seed: still the same either way.
  const std::string sampled = R"({"prompt":"Lily","max_tokens":24,"temperature":0.9,"seed":5)";
  EXPECT_EQ(stream_text(sampled + R"(,"stream":true})"), whole_text(sampled + "}"));
}

TEST_F(EngineHttpTest, ClientLeavingMidStreamCancelsAndTheNextRequestIsUnaffected) {
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0)";
  const std::string expected = whole_text(body + "}");
  const int64_t cancelled_before = service_->stats().cancellations;
  {
    test::RawConnection conn(port_);
    conn.send(test::post_request("/v1/completions",
                                 R"({"prompt":"One day","max_tokens":200,"ignore_eos":true,"temperature":0,"stream":true})"));
    conn.read_until_count("data: {", 3);
  }  // gone mid-decode
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (service_->stats().cancellations == cancelled_before && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(service_->stats().cancellations, cancelled_before + 1);
  EXPECT_EQ(stream_text(body + R"(,"stream":true})"), expected);
}

}  // namespace
}  // namespace keel::server
