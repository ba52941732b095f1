#include "server/completion_call.h"

#include <algorithm>
#include <random>

#include "core/log.h"
#include "server/sse.h"

namespace keel::server {

using engine::Event;
using engine::FinishReason;

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

namespace {

uint64_t fresh_seed() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

}  // namespace

const std::vector<engine::TokenLogprob> kNoLogprobs;

HarmonyReader::Parts read_harmony(HarmonyReader& reader, const Event& ev) {
  HarmonyReader::Parts parts = reader.push(ev.text);
  if (ev.kind == Event::Kind::kFinish && normal_finish(ev.reason)) {
    HarmonyReader::Parts rest = reader.finish();
    parts.content += rest.content;
    parts.reasoning += rest.reasoning;
  }
  return parts;
}

std::shared_ptr<Call> submit_call(HttpServer::State& s, CompletionRequest& request) {
  auto service = require_service(s);
  const ModelInfo info = service->model_info();
  const Endpoint endpoint = request.endpoint;
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
  call->prompts = std::move(prompts);
  return call;
}

PumpResult collect(HttpServer::State& s, Call& call, std::vector<Collected>* out, const std::function<bool()>& on_idle) {
  PumpStats stats;
  out->assign(call.choices.size(), Collected{});
  auto on_event = [&](size_t i, const Event& ev) {
    Collected& c = (*out)[i];
    c.text += ev.text;
    c.tokens.insert(c.tokens.end(), ev.tokens.begin(), ev.tokens.end());
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


std::optional<Collected> collect_single(HttpServer::State& s, Call& call, httplib::Response& res) {
  std::vector<Collected> cs;
  collect(s, call, &cs, [] { return true; });
  Collected& c = cs.front();
  if (!c.finish || !normal_finish(c.finish->reason)) {
    send_error(res, c.finish ? finish_error(*c.finish, s.options) : internal_error("request ended without a finish"));
    return std::nullopt;
  }
  return std::move(c);
}

void serve_event_stream(HttpServer::State& s, httplib::Response& res, std::function<bool(httplib::DataSink&)> body) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  // httplib sends the status line and headers before calling the provider.
  res.set_chunked_content_provider("text/event-stream", [&s, body = std::move(body)](size_t, httplib::DataSink& sink) {
    s.counters.stream_started();
    struct Ended {
      HttpServer::State& s;
      ~Ended() { s.counters.stream_ended(); }
    } ended{s};
    return body(sink);
  });
}

bool stream_reply(HttpServer::State& s, Call& call, ReplyEvents& events, httplib::DataSink& sink, const std::string& what) {
  const std::string start = events.start();
  bool ok = sink.write(start.data(), start.size());
  Choice& choice = *call.choices.front();
  PumpStats stats;
  auto on_event = [&](size_t, const Event& ev) -> WriteResult {
    const HarmonyReader::Parts parts = read_harmony(choice.harmony, ev);
    std::string out = events.text(choice.tools.push(parts.content));  // text that may open a call waits
    if (auto delta = choice.tools.take_call_delta()) out += events.call(*delta);
    bool end = false;
    if (ev.kind == Event::Kind::kFinish) {
      if (normal_finish(ev.reason)) {
        out += events.finish(ev, choice.tools.finish());
      } else {
        out += events.error(finish_error(ev, s.options));
        end = true;
      }
    }
    if (out.empty()) return WriteResult::kNothing;
    if (!sink.write(out.data(), out.size())) return WriteResult::kFailed;
    return end ? WriteResult::kEnd : WriteResult::kWrote;
  };
  auto on_idle = [&] { return sink.write(kSseHeartbeat.data(), kSseHeartbeat.size()); };
  if (ok) {
    ok = pump_choices(call.sources(), pump_options(s.options), on_event, on_idle, &stats) == PumpResult::kFinished;
  } else {
    for (EventSource* src : call.sources()) src->cancel();
  }
  s.counters.add_heartbeats(stats.heartbeats);
  if (!ok) {
    s.counters.count_disconnect();
    log_info("server: client gone during " + what + "; request cancelled");
    return false;
  }
  sink.done();
  return true;
}

std::optional<WholeReply> read_single(HttpServer::State& s, Call& call, httplib::Response& res) {
  std::optional<Collected> c = collect_single(s, call, res);
  if (!c) return std::nullopt;
  WholeReply r;
  Event whole = *c->finish;
  whole.text = c->text;
  Choice& choice = *call.choices.front();
  const HarmonyReader::Parts parts = read_harmony(choice.harmony, whole);
  r.content = choice.tools.push(parts.content);
  chat::ParsedReply reply = choice.tools.finish();  // inactive without tools: no calls
  r.content += reply.content;
  r.reasoning = parts.reasoning;
  r.calls = std::move(reply.calls);
  r.collected = std::move(*c);
  return r;
}

}  // namespace keel::server
