// POST /v1/chat/completions and POST /v1/completions: validate and tokenize on this HTTP
// thread, submit, then either stream SSE chunks or wait for the whole response. Waiting is
// always pump_choices() (event_pump.h) over the request's choices (n per prompt) — a poll with
// heartbeats, never a cancelling timeout.
#include <algorithm>
#include <random>

#include "core/log.h"
#include "server/event_pump.h"
#include "server/harmony_reader.h"
#include "server/openai_response.h"
#include "server/server_state.h"
#include "server/sse.h"
#include "server/tool_calls.h"

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
};

// The usage of a response of several choices: each prompt once (as OpenAI counts it, n
// choices of one prompt share it), the completions summed; the times are the longest of
// any choice (choices run side by side), so the rates are the response's throughput.
// `per_choice` in choice order.
engine::Usage total_usage(const Call& call, const std::vector<engine::Usage>& per_choice) {
  engine::Usage u;
  for (size_t i = 0; i < per_choice.size(); ++i) {
    if (i == 0 || call.choices[i]->prompt != call.choices[i - 1]->prompt) {
      u.prompt_tokens += per_choice[i].prompt_tokens;
      u.cached_tokens += per_choice[i].cached_tokens;
    }
    u.completion_tokens += per_choice[i].completion_tokens;
    u.prompt_ms = std::max(u.prompt_ms, per_choice[i].prompt_ms);
    u.generation_ms = std::max(u.generation_ms, per_choice[i].generation_ms);
  }
  return u;
}

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

const std::vector<engine::TokenLogprob> kNoLogprobs;

// An event's text split by the choice's harmony reader (all content when it is inactive);
// a normal finish flushes the reader.
HarmonyReader::Parts read_harmony(HarmonyReader& reader, const Event& ev) {
  HarmonyReader::Parts parts = reader.push(ev.text);
  if (ev.kind == Event::Kind::kFinish && normal_finish(ev.reason)) {
    HarmonyReader::Parts rest = reader.finish();
    parts.content += rest.content;
    parts.reasoning += rest.reasoning;
  }
  return parts;
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
    for (const auto& c : call->choices) {
      for (const json& chunk : c->builder.start_chunks()) ok = ok && write(sse_data(chunk));
    }
    PumpStats stats;
    std::vector<engine::Usage> usage(call->choices.size());
    size_t finished = 0;
    auto on_event = [&](size_t i, const Event& ev) -> WriteResult {
      Choice& choice = *call->choices[i];
      ResponseBuilder& builder = choice.builder;
      std::string out;
      const HarmonyReader::Parts parts = read_harmony(choice.harmony, ev);
      const std::string text = choice.tools.push(parts.content);  // text that may open a call waits
      builder.add_prompt_logprobs(ev.prompt_logprobs);
      // The event's logprobs go with its reasoning when it has no content.
      const bool lp_on_reasoning = !parts.reasoning.empty() && text.empty();
      if (!parts.reasoning.empty()) {
        out = sse_data(builder.reasoning_delta_chunk(parts.reasoning, lp_on_reasoning ? ev.logprobs : kNoLogprobs));
      }
      if (!text.empty() || (!ev.logprobs.empty() && !lp_on_reasoning) || builder.echo_pending()) {
        out += sse_data(builder.delta_chunk(text, lp_on_reasoning ? kNoLogprobs : ev.logprobs));
      }
      if (auto call = choice.tools.take_call_delta()) out += sse_data(builder.tool_call_delta_chunk(*call));
      bool end = false;
      if (ev.kind == Event::Kind::kFinish) {
        if (normal_finish(ev.reason)) {
          bool calls = false;
          if (choice.tools.active()) {
            const chat::ParsedReply reply = choice.tools.finish();
            if (!reply.content.empty()) out += sse_data(builder.delta_chunk(reply.content, {}));
            if (!reply.calls.empty() && !choice.tools.call_streamed()) out += sse_data(builder.tool_calls_chunk(reply.calls));
            calls = !reply.calls.empty();
          }
          json finish = builder.finish_chunk(ev.reason, calls);
          usage[i] = ev.usage;
          if (++finished < call->choices.size()) {
            out += sse_data(finish);
          } else {
            // The response's timings ride on its last chunk, as llama-server's do.
            const engine::Usage total = total_usage(*call, usage);
            if (call->include_usage) {
              json chunk = builder.usage_chunk(total);
              chunk["timings"] = timings_json(total);
              out += sse_data(finish) + sse_data(chunk);
            } else {
              finish["timings"] = timings_json(total);
              out += sse_data(finish);
            }
            out += kSseDone;
          }
        } else {
          // Headers are gone already: the error travels as an event OpenAI clients raise,
          // and ends the response (the other choices are cancelled).
          out += sse_data(finish_error(ev, s.options).to_json());
          end = true;
        }
      }
      if (out.empty()) return WriteResult::kNothing;
      if (!write(out)) return WriteResult::kFailed;
      return end ? WriteResult::kEnd : WriteResult::kWrote;
    };
    auto on_idle = [&] { return write(kSseHeartbeat); };
    const std::vector<EventSource*> sources = call->sources();
    if (ok) {
      ok = pump_choices(sources, pump_options(s.options), on_event, on_idle, &stats) == PumpResult::kFinished;
    } else {
      for (EventSource* src : sources) src->cancel();
    }
    s.counters.add_heartbeats(stats.heartbeats);
    if (!ok) {
      s.counters.count_disconnect();
      log_info("server: client gone during stream " + call->choices.front()->builder.id() + "; request cancelled");
      return false;
    }
    sink.done();
    return true;
  });
}

// The whole response of a non-streamed request, per choice; collect() calls `on_idle`
// every heartbeat.
struct Collected {
  std::string text;
  std::vector<engine::TokenLogprob> logprobs;
  std::vector<engine::TokenLogprob> prompt_logprobs;
  std::optional<Event> finish;
};

PumpResult collect(HttpServer::State& s, Call& call, std::vector<Collected>* out, const std::function<bool()>& on_idle) {
  PumpStats stats;
  out->assign(call.choices.size(), Collected{});
  auto on_event = [&](size_t i, const Event& ev) {
    Collected& c = (*out)[i];
    c.text += ev.text;
    c.logprobs.insert(c.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    c.prompt_logprobs.insert(c.prompt_logprobs.end(), ev.prompt_logprobs.begin(), ev.prompt_logprobs.end());
    if (ev.kind != Event::Kind::kFinish) return WriteResult::kNothing;
    c.finish = ev;
    // One choice failing fails the response: no need to wait for the others.
    return normal_finish(ev.reason) ? WriteResult::kNothing : WriteResult::kEnd;
  };
  const PumpResult r = pump_choices(call.sources(), pump_options(s.options), on_event, on_idle, &stats);
  s.counters.add_heartbeats(stats.heartbeats);
  return r;
}

json whole_response(HttpServer::State& s, Call& call, const std::vector<Collected>& cs, int* status) {
  // The choice that failed speaks for the response (the others were cancelled after it).
  const auto failed = std::find_if(cs.begin(), cs.end(), [](const Collected& c) {
    return c.finish && !normal_finish(c.finish->reason);
  });
  const bool unfinished = std::any_of(cs.begin(), cs.end(), [](const Collected& c) { return !c.finish; });
  if (failed != cs.end() || unfinished) {
    const ApiError err = failed != cs.end() ? finish_error(*failed->finish, s.options)
                                            : internal_error("request ended without a finish");
    *status = err.status();
    return err.to_json();
  }
  std::vector<engine::Usage> usage;
  for (const Collected& c : cs) usage.push_back(c.finish->usage);
  json out;
  for (size_t i = 0; i < cs.size(); ++i) {
    Choice& choice = *call.choices[i];
    choice.builder.add_prompt_logprobs(cs[i].prompt_logprobs);
    Event whole = *cs[i].finish;  // a normal finish (checked above), with the whole text
    whole.text = cs[i].text;
    const HarmonyReader::Parts parts = read_harmony(choice.harmony, whole);
    std::string text = choice.tools.push(parts.content);
    chat::ParsedReply reply = choice.tools.finish();  // inactive: no calls, no content
    text += reply.content;
    const json one = choice.builder.full(text, cs[i].logprobs, cs[i].finish->reason,
                                         i == 0 ? total_usage(call, usage) : usage[i], reply.calls, parts.reasoning);
    if (i == 0) {
      out = one;
    } else {
      out["choices"].push_back(one["choices"][0]);
    }
  }
  out["timings"] = timings_json(total_usage(call, usage));
  *status = 200;
  return out;
}

void respond_whole(HttpServer::State& s, std::shared_ptr<Call> call, httplib::Response& res) {
  std::vector<Collected> c;
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
    std::vector<Collected> c;
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
    CompletionRequest request = endpoint == Endpoint::kChat ? parse_chat_request(body, limits, req.body)
                                                            : parse_completion_request(body, limits, req.body);
    const ToolCallPlan tool_plan = plan_tool_calls(&request, info.tool_syntax);
    auto call = std::make_shared<Call>(s, request.include_usage);
    const std::string id = make_response_id(endpoint);
    const int64_t created = unix_now();
    // Choices in OpenAI's order: prompt p's n choices have indices p * n .. p * n + n - 1.
    const size_t n_prompts = endpoint == Endpoint::kChat ? 1 : request.prompts.size();
    const int64_t n_choices = static_cast<int64_t>(n_prompts) * request.n;
    if (n_choices > s.options.max_inflight) {
      // More than the server ever runs at once: waiting cannot help, so not a 429.
      throw bad_request(n_prompts > 1 ? "prompt" : "n",
                        std::to_string(n_prompts) + " prompt(s) x n = " + std::to_string(request.n) + " is " +
                            std::to_string(n_choices) + " generations; this server takes at most " +
                            std::to_string(s.options.max_inflight) + " at once (--parallel + --queue)");
    }
    for (size_t p = 0; p < n_prompts; ++p) {
      for (int j = 0; j < request.n; ++j) {
        call->admit();
        const int index = static_cast<int>(p) * request.n + j;
        call->choices.push_back(std::make_unique<Choice>(
            ResponseBuilder(request, id, created, info.id, [service](int32_t t) { return service->token_piece(t); },
                            index),
            tool_plan, endpoint == Endpoint::kChat && info.harmony_output, p));
      }
    }

    std::vector<std::vector<int32_t>> prompts(n_prompts);
    for (size_t p = 0; p < n_prompts; ++p) {
      prompts[p] = service->prompt_tokens(request, p);
      if (static_cast<int64_t>(prompts[p].size()) >= info.n_ctx) {
        const std::string what = endpoint == Endpoint::kChat ? "the prompt"
                                 : n_prompts == 1            ? "the prompt"
                                                             : "prompt " + std::to_string(p);
        throw bad_request(endpoint == Endpoint::kChat ? "messages" : "prompt",
                          what + " is " + std::to_string(prompts[p].size()) + " tokens; the context is " +
                              std::to_string(info.n_ctx) + " (--ctx), so at most " +
                              std::to_string(info.n_ctx - 1) + " prompt tokens fit",
                          "context_length_exceeded");
      }
    }
    if (request.echo) {
      for (const auto& c : call->choices) {
        const PromptInput& in = request.prompts[c->prompt];
        c->builder.set_echo(in.text ? *in.text : service->detokenize(prompts[c->prompt]),
                            service->token_piece(prompts[c->prompt].front()));
      }
    }
    engine::Request gen = request.generation;
    // Harmony replies are read by their markers (HarmonyReader), so those reach the text.
    gen.render_special_tokens = endpoint == Endpoint::kChat && info.harmony_output;
    if (s.options.request_timeout_seconds > 0) {
      gen.deadline = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(s.options.request_timeout_seconds * 1000.0));
    }
    // Choice j of a prompt samples with seed + j (a given seed reproduces every choice); the
    // engine's prefix cache shares a prompt between its choices once one has computed it.
    const uint64_t seed = request.seed_given ? gen.sampling.seed : fresh_seed();
    for (size_t i = 0; i < call->choices.size(); ++i) {
      Choice& c = *call->choices[i];
      engine::Request one = gen;
      one.prompt = prompts[c.prompt];
      one.sampling.seed = seed + i % static_cast<size_t>(request.n);
      c.source = service->submit(std::move(one));
      c.entry = s.inflight.add(c.source.get());
    }

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
  // Also without the /v1 prefix, as llama-server serves them: a client given the bare host
  // as its base URL calls /chat/completions.
  for (const char* path : {"/v1/chat/completions", "/chat/completions"}) {
    s.http.Post(path, [&s](const httplib::Request& req, httplib::Response& res) {
      handle_completion(s, Endpoint::kChat, req, res);
    });
  }
  for (const char* path : {"/v1/completions", "/completions"}) {
    s.http.Post(path, [&s](const httplib::Request& req, httplib::Response& res) {
      handle_completion(s, Endpoint::kCompletion, req, res);
    });
  }
}

}  // namespace keel::server
