// What the completion routes share (internal to server/): a request's choices as they run
// (Call, Choice), counting it against --parallel + --queue (Admission), submitting a parsed
// request, collecting a whole response, and the finish / usage rules every response
// format follows. routes_completion.cpp writes OpenAI's formats from it.
//
// Contract: a Call is made and submitted on one HTTP thread (submit_call), then handed to
// exactly one writer, which keeps it alive until the response ends; dropping it cancels
// every choice still running. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/event_pump.h"
#include "server/harmony_reader.h"
#include "server/openai_response.h"
#include "server/server_state.h"
#include "server/tool_calls.h"

namespace keel::server {

// Counts a completion request against --parallel + --queue for as long as it lives.
class Admission {
 public:
  explicit Admission(HttpServer::State& s) : s_(s) {
    s_.counters.request_started();
    if (s_.counters.snapshot().requests_active > s_.options.max_inflight) {
      s_.counters.request_ended();
      throw busy("server busy: " + std::to_string(s_.options.max_inflight) +
                 " requests already in flight (--parallel + --queue); retry later");
    }
  }
  ~Admission() { s_.counters.request_ended(); }
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

 private:
  HttpServer::State& s_;
};

// One choice of a request: its response builder (index i) and its engine request.
// Member order matters: the registry entry is released before the source is destroyed.
struct Choice {
  Choice(ResponseBuilder b, ToolCallPlan plan, bool harmony_output, size_t p)
      : builder(std::move(b)), harmony(harmony_output), tools(std::move(plan)), prompt(p) {}
  ResponseBuilder builder;
  HarmonyReader harmony;  // splits reasoning from content (inactive unless harmony)
  ToolCallReader tools;  // reads function calls out of the reply (inactive without tools)
  size_t prompt;         // which of the request's prompts this choice continues
  std::unique_ptr<EventSource> source;
  InflightRegistry::Entry entry;
};

// One submitted request (n choices, each its own engine request and slot): what its
// response writer needs, kept alive by the writer.
struct Call {
  Call(HttpServer::State& s, bool usage) : state(s), include_usage(usage) {}
  // Counts one more engine request against --parallel + --queue (throws 429 when full).
  void admit() { admissions.push_back(std::make_unique<Admission>(state)); }
  std::vector<EventSource*> sources() const {
    std::vector<EventSource*> out;
    for (const auto& c : choices) out.push_back(c->source.get());
    return out;
  }
  HttpServer::State& state;
  std::vector<std::unique_ptr<Admission>> admissions;
  bool include_usage;
  std::vector<std::unique_ptr<Choice>> choices;
  std::vector<std::vector<int32_t>> prompts;  // each prompt's tokens, as submitted
};

// The usage of a response of several choices: each prompt once (as OpenAI counts it, n
// choices of one prompt share it), the completions summed; the times are the longest of
// any choice (choices run side by side), so the rates are the response's throughput.
// `per_choice` in choice order.
engine::Usage total_usage(const Call& call, const std::vector<engine::Usage>& per_choice);

bool normal_finish(engine::FinishReason r);

// The error a request that ended abnormally reports (HTTP status, or an SSE error event).
ApiError finish_error(const engine::Event& finish, const ServerOptions& o);

PumpOptions pump_options(const ServerOptions& o);

extern const std::vector<engine::TokenLogprob> kNoLogprobs;

// An event's text split by the choice's harmony reader (all content when it is inactive);
// a normal finish flushes the reader.
HarmonyReader::Parts read_harmony(HarmonyReader& reader, const engine::Event& ev);

// Checks a parsed request against the server (its choices against --parallel + --queue,
// each prompt against the context), renders and tokenizes its prompts and submits its
// choices (n per prompt, in OpenAI's order). Throws ApiError / keel::Error before anything
// runs when it cannot.
std::shared_ptr<Call> submit_call(HttpServer::State& s, CompletionRequest& request);

// The whole response of a non-streamed request, per choice; collect() calls `on_idle`
// every heartbeat.
struct Collected {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<engine::TokenLogprob> logprobs;
  std::vector<engine::TokenLogprob> prompt_logprobs;
  std::optional<engine::Event> finish;
};

PumpResult collect(HttpServer::State& s, Call& call, std::vector<Collected>* out, const std::function<bool()>& on_idle);

// An SSE response: the headers go out at once (before any prefill), then `body(sink)` writes
// the events, counted as an open stream in /metrics while it runs. `body` returns false when
// the client is gone.
void serve_event_stream(HttpServer::State& s, httplib::Response& res, std::function<bool(httplib::DataSink&)> body);

// One streamed choice's reply in some API's events (the Responses and Messages APIs).
class ReplyEvents {
 public:
  virtual ~ReplyEvents() = default;
  virtual std::string start() = 0;                             // before any token
  virtual std::string text(const std::string& piece) = 0;      // content that can go out now
  // A forced call as it is written (ToolCallReader::take_call_delta): the first delta opens
  // it; finish() then gets that call first in reply.calls, with the same id, and closes it.
  virtual std::string call(const CallDelta& delta) = 0;
  virtual std::string finish(const engine::Event& finish, const chat::ParsedReply& reply) = 0;  // the rest
  virtual std::string error(const ApiError& error) = 0;        // ends the stream
};

// Streams the one choice of `call` through `events` (its content read through the choice's
// harmony and tool-call readers, heartbeats as SSE comments). Returns false when the client
// went away (the request is then cancelled); `what` names the stream in the log.
bool stream_reply(HttpServer::State& s, Call& call, ReplyEvents& events, httplib::DataSink& sink, const std::string& what);

// The whole reply of a call of one choice that finished normally; otherwise its error is
// sent on `res` and nullopt returned.
std::optional<Collected> collect_single(HttpServer::State& s, Call& call, httplib::Response& res);

// That reply read as the chat route reads it: a harmony model's reasoning split off, and
// the calls parsed out when the request had tools.
struct WholeReply {
  Collected collected;  // finish is set
  std::string content;
  std::string reasoning;
  std::vector<chat::ToolCall> calls;
};
std::optional<WholeReply> read_single(HttpServer::State& s, Call& call, httplib::Response& res);

}  // namespace keel::server
