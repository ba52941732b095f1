// POST /apply-template: a chat request's prompt as the model's template renders it
// ({"prompt": text}), nothing generated.
// POST /infill: editors' code completion (fill in the middle), run as /completion.
// POST /completion: llama-server's own completion route (its native clients and text
// front ends use it). The request is read by llama_request.h and runs exactly as a
// /v1/completions request of one prompt and one choice; only the response is written in
// llama-server's shape:
//  - whole: {"content", "tokens", "stop": true, "stop_type": eos | word | limit,
//    "stopping_word", "tokens_predicted", "tokens_evaluated", "tokens_cached", "prompt",
//    "generation_settings", "timings", "completion_probabilities" (n_probs), ...};
//  - streamed: `data: {"content", "tokens", "stop": false, ...}` per piece of text, then the
//    whole object with empty content and "stop": true. No `data: [DONE]` (llama-server
//    sends none); an error after the headers is a `data: {"error": ...}` event.
#include <string>

#include "core/log.h"
#include "server/completion_call.h"
#include "server/llama_request.h"
#include "server/json_fields.h"
#include "server/sse.h"

namespace keel::server {
namespace {

using engine::Event;
using engine::FinishReason;

// What the response needs beyond the Call.
struct LlamaResponse {
  std::string model;
  std::string prompt;  // the prompt as text
  int32_t n_probs = 0;
  bool return_tokens = false;
  json settings;  // generation_settings
  std::function<std::string(int32_t)> piece;
};

json piece_json(int32_t id, const std::string& piece, float logprob) {
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return {{"id", id}, {"token", sanitize_utf8(piece)}, {"bytes", std::move(bytes)}, {"logprob", logprob}};
}

json probabilities_json(const LlamaResponse& r, const std::vector<engine::TokenLogprob>& logprobs) {
  json out = json::array();
  for (const engine::TokenLogprob& lp : logprobs) {
    json entry = piece_json(lp.token, lp.text, lp.logprob);
    json top = json::array();
    for (const auto& [id, logprob] : lp.top) top.push_back(piece_json(id, r.piece(id), logprob));
    entry["top_logprobs"] = std::move(top);
    out.push_back(std::move(entry));
  }
  return out;
}

const char* stop_type(const Event& finish) {
  if (finish.reason == FinishReason::kLength) return "limit";
  return finish.stop_word.empty() ? "eos" : "word";
}

json partial_json(const LlamaResponse& r, const Event& ev, int64_t predicted, int64_t evaluated) {
  json out = {{"index", 0},
              {"content", ev.text},
              {"tokens", r.return_tokens ? json(ev.tokens) : json::array()},
              {"stop", false},
              {"id_slot", -1},
              {"tokens_predicted", predicted},
              {"tokens_evaluated", evaluated}};
  if (r.n_probs > 0 && !ev.logprobs.empty()) out["completion_probabilities"] = probabilities_json(r, ev.logprobs);
  return out;
}

// The closing object: `text` and `tokens` are the whole output (streamed: empty, sent already).
json final_json(const LlamaResponse& r, const std::string& text, const std::vector<int32_t>& tokens,
                const Event& finish) {
  const engine::Usage& u = finish.usage;
  return {{"index", 0},
          {"content", text},
          {"tokens", r.return_tokens ? json(tokens) : json::array()},
          {"id_slot", -1},
          {"stop", true},
          {"model", r.model},
          {"tokens_predicted", u.completion_tokens},
          {"tokens_evaluated", u.prompt_tokens},
          {"generation_settings", r.settings},
          {"prompt", r.prompt},
          {"has_new_line", text.find('\n') != std::string::npos},
          {"truncated", false},
          {"stop_type", stop_type(finish)},
          {"stopping_word", finish.stop_word},
          // The slot's cache after the reply: the prompt and every token but the last.
          {"tokens_cached", std::max<int64_t>(0, u.prompt_tokens + u.completion_tokens - 1)},
          {"timings", timings_json(u)}};
}

json settings_json(const CompletionRequest& req, int32_t n_probs) {
  const engine::Request& g = req.generation;
  const sampling::SamplingParams& s = g.sampling;
  json out = {{"n_predict", g.max_tokens},      {"temperature", s.temperature},
              {"top_k", s.top_k},               {"top_p", s.top_p},
              {"min_p", s.min_p},               {"typical_p", s.typical_p},
              {"repeat_penalty", s.repeat_penalty}, {"repeat_last_n", s.penalty_last_n},
              {"presence_penalty", s.presence_penalty}, {"frequency_penalty", s.frequency_penalty},
              {"stop", g.stop},                 {"ignore_eos", g.ignore_eos},
              {"n_probs", n_probs},             {"stream", req.stream}};
  if (req.seed_given) out["seed"] = s.seed;
  return out;
}

void stream_llama(HttpServer::State& s, std::shared_ptr<Call> call, std::shared_ptr<const LlamaResponse> r,
                  httplib::Response& res) {
  serve_event_stream(s, res, [&s, call, r](httplib::DataSink& sink) {
    const int64_t evaluated = static_cast<int64_t>(call->prompts.front().size());
    int64_t predicted = 0;
    PumpStats stats;
    auto on_event = [&](size_t, const Event& ev) -> WriteResult {
      std::string out;
      predicted += static_cast<int64_t>(ev.tokens.size());
      if (!ev.text.empty() || !ev.tokens.empty()) out = sse_data(partial_json(*r, ev, predicted, evaluated));
      bool end = false;
      if (ev.kind == Event::Kind::kFinish) {
        if (normal_finish(ev.reason)) {
          out += sse_data(final_json(*r, "", {}, ev));
        } else {
          out += sse_data(finish_error(ev, s.options).to_json());
          end = true;
        }
      }
      if (out.empty()) return WriteResult::kNothing;
      if (!sink.write(out.data(), out.size())) return WriteResult::kFailed;
      return end ? WriteResult::kEnd : WriteResult::kWrote;
    };
    auto on_idle = [&] { return sink.write(kSseHeartbeat.data(), kSseHeartbeat.size()); };
    const bool ok = pump_choices(call->sources(), pump_options(s.options), on_event, on_idle, &stats) ==
                    PumpResult::kFinished;
    s.counters.add_heartbeats(stats.heartbeats);
    if (!ok) {
      s.counters.count_disconnect();
      log_info("server: client gone during /completion stream; request cancelled");
      return false;
    }
    sink.done();
    return true;
  });
}

void respond_llama_whole(HttpServer::State& s, Call& call, const LlamaResponse& r, httplib::Response& res) {
  const std::optional<Collected> whole_reply = collect_single(s, call, res);
  if (!whole_reply) return;
  const Collected& c = *whole_reply;
  json body = final_json(r, c.text, c.tokens, *c.finish);
  if (r.n_probs > 0) body["completion_probabilities"] = probabilities_json(r, c.logprobs);
  send_json(res, body);
}

// Runs a /completion body (`raw`: its text, for JSON Schema key order) and writes the reply.
void run_llama_completion(HttpServer::State& s, const json& body, std::string_view raw, httplib::Response& res) {
  auto service = require_service(s);
  const ModelInfo info = service->model_info();
  RequestLimits limits;
  limits.n_vocab = info.n_vocab;
  LlamaCompletionRequest parsed = parse_llama_completion(body, limits, raw);
  auto call = submit_call(s, parsed.request);
  auto r = std::make_shared<LlamaResponse>();
  r->model = info.id;
  const PromptInput& in = parsed.request.prompts.front();
  r->prompt = in.text ? *in.text : service->detokenize(call->prompts.front());
  r->n_probs = parsed.n_probs;
  r->return_tokens = parsed.return_tokens;
  r->settings = settings_json(parsed.request, parsed.n_probs);
  r->piece = [service](int32_t t) { return service->token_piece(t); };
  if (parsed.request.stream) {
    stream_llama(s, std::move(call), std::move(r), res);
  } else {
    respond_llama_whole(s, *call, *r, res);
  }
}

// POST /infill (llama-server's, for editors' code completion): input_prefix, input_suffix,
// input_extra ([{filename, text}], other files' context), and prompt (text the middle
// starts with) become a fill-in-the-middle prompt (tokenizer/fill_in_middle.h) that runs as
// /completion with the body's other fields. As llama-server fits it: with B = min(2048,
// ctx / 2), the prefix keeps its last 3B/4 tokens, the suffix its first B/4 - 2 - |prompt|,
// the context its last ctx - B - 2 n_predict.
void handle_infill(HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  auto service = require_service(s);
  json body = parse_body(req.body);
  const JsonFields f(body);
  auto text_field = [&](const char* name) {
    const json* v = f.get(name);
    if (v && !v->is_string()) throw bad_request(name, std::string("'") + name + "' must be a string, got " + describe(*v), "invalid_type");
    return v ? v->get<std::string>() : std::string();
  };
  const std::string prefix = text_field("input_prefix"), suffix = text_field("input_suffix"), middle = text_field("prompt");
  std::vector<std::pair<std::string, std::string>> chunks;  // (filename, text)
  if (const json* extra = f.get("input_extra")) {
    if (!extra->is_array()) throw bad_request("input_extra", "'input_extra' must be an array of {filename, text}", "invalid_type");
    for (const json& c : *extra) {
      const json* t = c.is_object() ? JsonFields(c).get("text") : nullptr;
      const json* n = c.is_object() ? JsonFields(c).get("filename") : nullptr;
      if (!t || !t->is_string() || (n && !n->is_string())) {
        throw bad_request("input_extra", "'input_extra' entries must be {\"filename\": string, \"text\": string}, got " +
                                             describe(c), "invalid_type");
      }
      chunks.emplace_back(n ? n->get<std::string>() : std::string(), t->get<std::string>());
    }
  }
  const int64_t n_ctx = service->model_info().n_ctx;
  const json* n_predict = f.get("n_predict") ? f.get("n_predict") : f.get("max_tokens");
  const int64_t predict = n_predict && as_integer(*n_predict) ? std::max<int64_t>(0, *as_integer(*n_predict)) : 0;
  const int64_t batch = std::min<int64_t>(2048, n_ctx / 2);
  tokenizer::FimRequest fim;
  fim.prefix = prefix;
  fim.suffix = suffix;
  fim.middle = middle;
  for (const auto& [name, text] : chunks) fim.extra.push_back({name, text});
  const int64_t middle_tokens = static_cast<int64_t>(service->tokenize(middle, false, false).size());
  fim.prefix_max = 3 * batch / 4;
  fim.suffix_max = std::max<int64_t>(0, batch / 4 - (2 + middle_tokens));
  fim.extra_max = std::max<int64_t>(0, n_ctx - batch - 2 * predict);
  body["prompt"] = service->infill_tokens(fim);
  for (const char* k : {"input_prefix", "input_suffix", "input_extra"}) body.erase(k);
  run_llama_completion(s, body, {}, res);
}

void apply_template(HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  auto service = require_service(s);
  RequestLimits limits;
  limits.n_vocab = service->model_info().n_vocab;
  CompletionRequest request = parse_chat_request(parse_body(req.body), limits, req.body);
  plan_tool_calls(&request, service->model_info().tool_syntax);  // as submit_call renders it
  send_json(res, {{"prompt", sanitize_utf8(service->chat_prompt(request))}});
}

}  // namespace

void add_llama_routes(HttpServer::State& s) {
  s.http.Post("/apply-template", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { apply_template(s, req, res); });
  });
  s.http.Post("/completion", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { run_llama_completion(s, parse_body(req.body), req.body, res); });
  });
  s.http.Post("/infill", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { handle_infill(s, req, res); });
  });
}

}  // namespace keel::server
