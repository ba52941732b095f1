// POST /v1/chat/completions and POST /v1/completions: validate and tokenize on this HTTP
// thread, submit, then either stream SSE chunks or wait for the whole response. Waiting is
// always pump_choices() (event_pump.h) over the request's choices (n per prompt) — a poll with
// heartbeats, never a cancelling timeout.
#include <algorithm>

#include "core/log.h"
#include "server/completion_call.h"
#include "server/sse.h"

namespace keel::server {
namespace {

using engine::Event;
using engine::FinishReason;

void stream_sse(HttpServer::State& s, std::shared_ptr<Call> call, httplib::Response& res) {
  serve_event_stream(s, res, [&s, call](httplib::DataSink& sink) {
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
    auto call = submit_call(s, request);

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
