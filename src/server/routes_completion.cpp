// POST /v1/chat/completions and POST /v1/completions: validate and tokenize on this HTTP
// thread, submit, then either stream SSE chunks or wait for the whole response. Waiting is
// always pump_events() — a poll with heartbeats, never a cancelling timeout.
#include <random>

#include "core/log.h"
#include "server/event_pump.h"
#include "server/openai_response.h"
#include "server/server_state.h"
#include "server/sse.h"

namespace keel::server {
namespace {

using engine::Event;
using engine::FinishReason;

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

// One submitted request: what its response writer needs, kept alive by the writer.
// Member order matters: the registry entry is released before the source is destroyed.
struct Call {
  Call(HttpServer::State& s, ResponseBuilder b, bool usage) : admission(s), builder(std::move(b)), include_usage(usage) {}
  Admission admission;
  ResponseBuilder builder;
  bool include_usage;
  std::unique_ptr<EventSource> source;
  InflightRegistry::Entry entry;
};

bool normal_finish(FinishReason r) { return r == FinishReason::kStop || r == FinishReason::kLength; }

// The error a request that ended abnormally reports (HTTP status, or an SSE error event).
ApiError finish_error(const Event& finish, const ServerOptions& o) {
  switch (finish.reason) {
    case FinishReason::kDeadline:
      return ApiError(504, "timeout_error", "timeout", "",
                      "request exceeded the server's --timeout of " + std::to_string(o.request_timeout_seconds) + " s");
    case FinishReason::kCancelled:
      return unavailable("cancelled", "request cancelled (the server is shutting down)");
    default:
      return ApiError(500, "server_error", "engine_error", "",
                      "generation failed: " + (finish.error.empty() ? std::string("unknown engine error") : finish.error));
  }
}

PumpOptions pump_options(const ServerOptions& o) {
  return {std::chrono::milliseconds(std::max<int64_t>(1, static_cast<int64_t>(o.heartbeat_seconds * 1000.0)))};
}

uint64_t fresh_seed() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

void stream_sse(HttpServer::State& s, std::shared_ptr<Call> call, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  // httplib sends the status line and headers before calling the provider: the client
  // has its headers at once, before any prefill.
  res.set_chunked_content_provider("text/event-stream", [&s, call](size_t, httplib::DataSink& sink) {
    s.counters.stream_started();
    struct Ended { HttpServer::State& s; ~Ended() { s.counters.stream_ended(); } } ended{s};
    auto write = [&sink](std::string_view text) { return sink.write(text.data(), text.size()); };
    bool ok = true;
    for (const json& chunk : call->builder.start_chunks()) ok = ok && write(sse_data(chunk));
    PumpStats stats;
    auto on_event = [&](const Event& ev) -> WriteResult {
      std::string out;
      if (!ev.text.empty() || !ev.logprobs.empty()) out = sse_data(call->builder.delta_chunk(ev.text, ev.logprobs));
      if (ev.kind == Event::Kind::kFinish) {
        if (normal_finish(ev.reason)) {
          out += sse_data(call->builder.finish_chunk(ev.reason));
          if (call->include_usage) out += sse_data(call->builder.usage_chunk(ev.usage));
          out += kSseDone;
        } else {
          // Headers are gone already: the error travels as an event OpenAI clients raise.
          out += sse_data(finish_error(ev, s.options).to_json());
        }
      }
      if (out.empty()) return WriteResult::kNothing;
      return write(out) ? WriteResult::kWrote : WriteResult::kFailed;
    };
    auto on_idle = [&] { return write(kSseHeartbeat); };
    if (ok) {
      ok = pump_events(*call->source, pump_options(s.options), on_event, on_idle, &stats) == PumpResult::kFinished;
    } else {
      call->source->cancel();
    }
    s.counters.add_heartbeats(stats.heartbeats);
    if (!ok) {
      s.counters.count_disconnect();
      log_info("server: client gone during stream " + call->builder.id() + "; request cancelled");
      return false;
    }
    sink.done();
    return true;
  });
}

// The whole response of a non-streamed request; collect() calls `on_idle` every heartbeat.
struct Collected {
  std::string text;
  std::vector<engine::TokenLogprob> logprobs;
  std::optional<Event> finish;
};

PumpResult collect(HttpServer::State& s, Call& call, Collected* out, const std::function<bool()>& on_idle) {
  PumpStats stats;
  auto on_event = [&](const Event& ev) {
    out->text += ev.text;
    out->logprobs.insert(out->logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    if (ev.kind == Event::Kind::kFinish) out->finish = ev;
    return WriteResult::kNothing;
  };
  const PumpResult r = pump_events(*call.source, pump_options(s.options), on_event, on_idle, &stats);
  s.counters.add_heartbeats(stats.heartbeats);
  return r;
}

json whole_response(HttpServer::State& s, Call& call, const Collected& c, int* status) {
  if (c.finish && normal_finish(c.finish->reason)) {
    *status = 200;
    return call.builder.full(c.text, c.logprobs, c.finish->reason, c.finish->usage);
  }
  const ApiError err = c.finish ? finish_error(*c.finish, s.options) : internal_error("request ended without a finish");
  *status = err.status();
  return err.to_json();
}

void respond_whole(HttpServer::State& s, std::shared_ptr<Call> call, httplib::Response& res) {
  Collected c;
  collect(s, *call, &c, [] { return true; });
  int status = 200;
  json body = whole_response(s, *call, c, &status);
  send_json(res, body, status);
}

// Opt-in (request header X-Keel-Heartbeat: 1): headers at once, a space every heartbeat
// while waiting, then the JSON body. The status is 200 whatever happens; an error arrives
// as an OpenAI error object in the body. A failed space write cancels the request.
void respond_whole_padded(HttpServer::State& s, std::shared_ptr<Call> call, httplib::Response& res) {
  // "; charset=utf-8" keeps httplib from gzip-buffering the padding.
  res.set_chunked_content_provider("application/json; charset=utf-8", [&s, call](size_t, httplib::DataSink& sink) {
    Collected c;
    auto on_idle = [&sink] { return sink.write(" ", 1); };
    if (collect(s, *call, &c, on_idle) != PumpResult::kFinished) {
      s.counters.count_disconnect();
      return false;
    }
    int status = 200;
    const std::string body = dump(whole_response(s, *call, c, &status));
    if (!sink.write(body.data(), body.size())) return false;
    sink.done();
    return true;
  });
}

void handle_completion(HttpServer::State& s, Endpoint endpoint, const httplib::Request& req,
                       httplib::Response& res) {
  try {
    auto service = require_service(s);
    const ModelInfo info = service->model_info();
    const json body = parse_body(req.body);
    RequestLimits limits;
    limits.n_vocab = info.n_vocab;
    CompletionRequest request = endpoint == Endpoint::kChat ? parse_chat_request(body, limits)
                                                            : parse_completion_request(body, limits);
    ResponseBuilder builder(request, make_response_id(endpoint), unix_now(), info.id,
                            [service](int32_t t) { return service->token_piece(t); });
    auto call = std::make_shared<Call>(s, std::move(builder), request.include_usage);

    engine::Request gen = request.generation;
    gen.prompt = service->prompt_tokens(request);
    if (static_cast<int64_t>(gen.prompt.size()) >= info.n_ctx) {
      throw bad_request(endpoint == Endpoint::kChat ? "messages" : "prompt",
                        "the prompt is " + std::to_string(gen.prompt.size()) + " tokens; the context is " +
                            std::to_string(info.n_ctx) + " (--ctx), so at most " + std::to_string(info.n_ctx - 1) +
                            " prompt tokens fit", "context_length_exceeded");
    }
    if (!request.seed_given) gen.sampling.seed = fresh_seed();
    if (s.options.request_timeout_seconds > 0) {
      gen.deadline = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(s.options.request_timeout_seconds * 1000.0));
    }
    call->source = service->submit(std::move(gen));
    call->entry = s.inflight.add(call->source.get());

    if (request.stream) {
      stream_sse(s, std::move(call), res);
    } else if (req.get_header_value("X-Keel-Heartbeat") == "1") {
      respond_whole_padded(s, std::move(call), res);
    } else {
      respond_whole(s, std::move(call), res);
    }
  } catch (const keel::Error& e) {
    send_error(res, from_error(e));
  } catch (const std::exception& e) {
    log_error(std::string("server: completion handler: ") + e.what());
    send_error(res, internal_error(std::string("internal error: ") + e.what()));
  }
}

}  // namespace

void add_completion_routes(HttpServer::State& s) {
  s.http.Post("/v1/chat/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    handle_completion(s, Endpoint::kChat, req, res);
  });
  s.http.Post("/v1/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    handle_completion(s, Endpoint::kCompletion, req, res);
  });
}

}  // namespace keel::server
