// Response and chunk JSON in OpenAI's exact shapes, SSE framing, and metrics text.
#include <gtest/gtest.h>

#include "server/metrics.h"
#include "server/openai_response.h"
#include "server/sse.h"

namespace keel::server {
namespace {

using engine::FinishReason;

CompletionRequest request(Endpoint e, bool stream = false, bool usage = false, bool logprobs = false) {
  CompletionRequest r;
  r.endpoint = e;
  r.stream = stream;
  r.include_usage = usage;
  r.generation.sampling.logprobs = logprobs;
  return r;
}

std::string piece(int32_t t) { return "<" + std::to_string(t) + ">"; }

TEST(Response, ChatCompletionShape) {
  ResponseBuilder b(request(Endpoint::kChat), "chatcmpl-1", 1700000000, "m", piece);
  const json j = b.full("Hi", {}, FinishReason::kLength, {5, 2, 3});
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "m");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hi");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
}

TEST(Response, ChatChunksInOrderWithUsage) {
  ResponseBuilder b(request(Endpoint::kChat, true, true), "chatcmpl-2", 1, "m", piece);
  const auto start = b.start_chunks();
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(start[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(start[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(start[0].contains("usage") && start[0]["usage"].is_null());
  const json d = b.delta_chunk("tok", {});
  EXPECT_EQ(d["choices"][0]["delta"]["content"], "tok");
  EXPECT_EQ(d["id"], "chatcmpl-2");
  const json f = b.finish_chunk(FinishReason::kStop);
  EXPECT_EQ(f["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(f["choices"][0]["delta"].empty());
  const json u = b.usage_chunk({3, 1, 0});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 4);
}

TEST(Response, ChunksOmitUsageUnlessAsked) {
  ResponseBuilder b(request(Endpoint::kChat, true, false), "x", 1, "m", piece);
  EXPECT_FALSE(b.delta_chunk("a", {}).contains("usage"));
}

TEST(Response, ChatLogprobsCarryBytesAndValidTokenText) {
  ResponseBuilder b(request(Endpoint::kChat, false, false, true), "x", 1, "m", piece);
  engine::TokenLogprob lp;
  lp.token = 300;
  lp.text = "\xE2\x82";  // half of a euro sign
  lp.logprob = -0.5f;
  lp.top = {{300, -0.5f}, {17, -1.5f}};
  const json j = b.full("\xE2\x82", {lp}, FinishReason::kStop, {});
  const json& c = j["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(c["bytes"], json::array({0xE2, 0x82}));
  EXPECT_EQ(c["logprob"], -0.5);
  EXPECT_EQ(c["top_logprobs"].size(), 2u);
  EXPECT_EQ(c["top_logprobs"][1]["token"], "<17>");
  // Serialising never throws, whatever bytes the model produced.
  EXPECT_NO_THROW(dump(j));
}

// echo: the prompt before the text, its tokens first in the logprob arrays (the first
// with null), offsets into the echoed text without BOS / leading-space surplus.
TEST(Response, EchoPutsThePromptFirstWholeOrStreamed) {
  engine::TokenLogprob once{5, " Once", -0.25f, {{5, -0.25f}}}, upon{6, " upon", -0.5f, {}};
  engine::TokenLogprob comma{7, ",", -0.75f, {}};
  for (bool streamed : {false, true}) {
    ResponseBuilder b(request(Endpoint::kCompletion, streamed, false, true), "cmpl-1", 1, "m", piece);
    b.set_echo("Once upon", "<s>");
    b.add_prompt_logprobs({once, upon});
    json lp, text;
    if (streamed) {
      EXPECT_TRUE(b.echo_pending());
      const json d1 = b.delta_chunk(",", {comma});
      EXPECT_FALSE(b.echo_pending());
      const json d2 = b.delta_chunk(" x", {});
      text = d1["choices"][0]["text"];
      lp = d1["choices"][0]["logprobs"];
      EXPECT_EQ(d2["choices"][0]["text"], " x");  // the echo went once
    } else {
      const json j = b.full(",", {comma}, FinishReason::kLength, {2, 1, 0});
      text = j["choices"][0]["text"];
      lp = j["choices"][0]["logprobs"];
    }
    EXPECT_EQ(text, "Once upon,");
    EXPECT_EQ(lp["tokens"], json::array({"<s>", " Once", " upon", ","}));
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_EQ(lp["token_logprobs"][2], json(-0.5f));
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    EXPECT_EQ(lp["top_logprobs"][1]["<5>"], json(-0.25f));
    EXPECT_EQ(lp["text_offset"], json::array({0, 0, 4, 9}));
  }
}

TEST(Response, TextCompletionAndLegacyLogprobs) {
  ResponseBuilder b(request(Endpoint::kCompletion, true, false, true), "cmpl-1", 1, "m", piece);
  EXPECT_TRUE(b.start_chunks().empty());
  engine::TokenLogprob a{1, "ab", -0.1f, {{1, -0.1f}}}, c{2, "c", -0.2f, {}};
  const json d1 = b.delta_chunk("ab", {a});
  const json d2 = b.delta_chunk("c", {c});
  EXPECT_EQ(d1["object"], "text_completion");
  EXPECT_EQ(d1["choices"][0]["text"], "ab");
  EXPECT_EQ(d1["choices"][0]["logprobs"]["text_offset"][0], 0);
  EXPECT_EQ(d2["choices"][0]["logprobs"]["text_offset"][0], 2);  // running offset
  EXPECT_EQ(d1["choices"][0]["logprobs"]["top_logprobs"][0]["<1>"], json(-0.1f));
  const json full = ResponseBuilder(request(Endpoint::kCompletion), "cmpl-2", 1, "m", piece)
                        .full("abc", {}, FinishReason::kStop, {1, 3, 0});
  EXPECT_EQ(full["object"], "text_completion");
  EXPECT_EQ(full["choices"][0]["text"], "abc");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "stop");
}

TEST(Response, IdsArePrefixedAndDistinct) {
  const std::string a = make_response_id(Endpoint::kChat), b = make_response_id(Endpoint::kChat);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(make_response_id(Endpoint::kCompletion).rfind("cmpl-", 0), 0u);
  EXPECT_NE(a, b);
}

TEST(Sse, FramingIsOneDataLinePerEvent) {
  const std::string e = sse_data(json{{"text", "a\nb"}});
  EXPECT_EQ(e, "data: {\"text\":\"a\\nb\"}\n\n");
  EXPECT_EQ(std::string(kSseHeartbeat), ": keep-alive\n\n");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
}

TEST(JsonIo, DumpReplacesInvalidUtf8InsteadOfThrowing) {
  const std::string out = dump(json{{"t", std::string("a\xFF" "b")}});
  EXPECT_EQ(out, "{\"t\":\"a\xEF\xBF\xBD" "b\"}");
}

TEST(JsonIo, FindsFirstInvalidByte) {
  EXPECT_FALSE(find_invalid_utf8("h\xC3\xA9llo").has_value());
  EXPECT_EQ(find_invalid_utf8("ab\xC0\x80"), 2u);   // overlong
  EXPECT_EQ(find_invalid_utf8("abc\xE2\x82"), 3u);  // truncated
}

// Every line of the exposition is a comment or `name{labels} value`.
void expect_prometheus_lines(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    ASSERT_NE(end, std::string::npos) << "last line must end with a newline";
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.rfind("keel_", 0), 0u) << line;
    size_t used = 0;
    std::stod(line.substr(space + 1), &used);
    EXPECT_EQ(used, line.size() - space - 1) << line;
  }
}

TEST(Metrics, TextFormatWithEngineStats) {
  ServerCounters counters;
  counters.count_response(200);
  counters.count_response(429);
  counters.count_response(418);
  counters.add_heartbeats(3);
  MetricsInput in;
  in.ready = true;
  in.server = counters.snapshot();
  engine::EngineStats s;
  s.requests_finished[0] = 4;
  s.requests_finished[2] = 1;
  s.cached_tokens = 12;
  s.step_seconds_buckets = {1, 3, 5};
  s.steps = 6;
  s.step_seconds_sum = 0.25;
  in.engine = s;
  in.step_bounds = {0.001, 0.01, 0.1};
  in.n_parallel = 4;
  const std::string text = render_metrics(in);
  expect_prometheus_lines(text);
  for (const char* want : {"keel_ready 1\n", "keel_http_responses_total{code=\"429\"} 1\n",
                           "keel_http_responses_total{code=\"other\"} 1\n", "keel_heartbeats_total 3\n",
                           "keel_requests_total{outcome=\"stop\"} 4\n", "keel_requests_total{outcome=\"cancelled\"} 1\n",
                           "keel_cached_tokens_total 12\n", "keel_slots{state=\"idle\"} 4\n",
                           "# TYPE keel_step_seconds histogram\n", "keel_step_seconds_bucket{le=\"0.01\"} 3\n",
                           "keel_step_seconds_bucket{le=\"+Inf\"} 6\n", "keel_step_seconds_sum 0.25\n",
                           "keel_step_seconds_count 6\n"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
}

TEST(Metrics, LoadingServerHasNoEngineFamilies) {
  MetricsInput in;
  const std::string text = render_metrics(in);
  expect_prometheus_lines(text);
  EXPECT_NE(text.find("keel_ready 0\n"), std::string::npos);
  EXPECT_EQ(text.find("keel_requests_total"), std::string::npos);
}

}  // namespace
}  // namespace keel::server
