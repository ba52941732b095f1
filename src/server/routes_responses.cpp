// POST /v1/responses: OpenAI's Responses API. The request is read by responses_request.h
// into a chat request and runs exactly as /v1/chat/completions with one choice (function
// calls read by the same ToolCallReader); the reply is a `response` object whose output is
// a message item with one output_text part (before it a reasoning item when a harmony
// model reasoned) and a function_call item per call. A stream is the typed events the
// official clients accumulate: response.created, response.in_progress, then for the
// message response.output_item.added, response.content_part.added,
// response.output_text.delta..., response.output_text.done, response.content_part.done,
// response.output_item.done; for each call response.output_item.added,
// response.function_call_arguments.delta (a forced call's as they are written) / .done,
// response.output_item.done; then
// response.completed (or response.incomplete when max_output_tokens ended it). Each is
// `event: TYPE` + `data: {..., "type": TYPE, "sequence_number": n}`. A streamed reply
// carries the content only (a harmony model's reasoning goes in whole replies). An error
// after the headers is an `error` event.
#include <random>
#include <string>

#include "core/log.h"
#include "server/completion_call.h"
#include "server/json_fields.h"
#include "server/responses_request.h"
#include "server/sse.h"

namespace keel::server {
namespace {

using engine::Event;
using engine::FinishReason;

std::string random_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 32; ++i) id += hex[rng() & 15];
  return id;
}

// What every response object of one request repeats.
struct ResponseFrame {
  std::string id = random_id("resp_");
  std::string message_id = random_id("msg_");
  int64_t created = unix_now();
  std::string model;
  ResponsesRequest request;
  json tools = json::array();  // as the request gave them (echoed)
  json tool_choice = "auto";
};

json usage_json(const engine::Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json message_item(const ResponseFrame& f, const std::string& status, json content) {
  return {{"id", f.message_id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

// The response object; `finish` null while it runs.
json response_json(const ResponseFrame& f, json output, const Event* finish) {
  const sampling::SamplingParams& s = f.request.chat.generation.sampling;
  json r = {{"id", f.id},
            {"object", "response"},
            {"created_at", f.created},
            {"status", "in_progress"},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"instructions", f.request.instructions ? json(*f.request.instructions) : json(nullptr)},
            {"max_output_tokens", f.request.max_output_tokens ? json(*f.request.max_output_tokens) : json(nullptr)},
            {"model", f.model},
            {"output", std::move(output)},
            {"parallel_tool_calls", true},
            {"previous_response_id", nullptr},
            {"reasoning", {{"effort", f.request.chat.reasoning_effort.empty() ? json(nullptr) : json(f.request.chat.reasoning_effort)},
                           {"summary", nullptr}}},
            {"store", false},
            {"temperature", s.temperature},
            {"text", {{"format", f.request.text_format}}},
            {"tool_choice", f.tool_choice},
            {"tools", f.tools},
            {"top_p", s.top_p},
            {"truncation", "disabled"},
            {"usage", nullptr},
            {"user", f.request.chat.user.empty() ? json(nullptr) : json(f.request.chat.user)},
            {"metadata", json::object()}};
  if (finish) {
    const bool cut = finish->reason == FinishReason::kLength;
    r["status"] = cut ? "incomplete" : "completed";
    if (cut) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    r["usage"] = usage_json(finish->usage);
  }
  return r;
}

const char* item_status(const Event& finish) { return finish.reason == FinishReason::kLength ? "incomplete" : "completed"; }

json function_call_item(const chat::ToolCall& call, const std::string& id, const std::string& status, bool with_arguments) {
  return {{"id", id},
          {"type", "function_call"},
          {"status", status},
          {"call_id", call.id},
          {"name", call.name},
          {"arguments", with_arguments ? call.arguments : std::string()}};
}

void respond_whole(HttpServer::State& s, Call& call, const ResponseFrame& f, httplib::Response& res) {
  const std::optional<WholeReply> whole = read_single(s, call, res);
  if (!whole) return;
  const Collected& c = whole->collected;
  const std::string status = item_status(*c.finish);
  json output = json::array();
  if (!whole->reasoning.empty()) {
    output.push_back({{"id", random_id("rs_")},
                      {"type", "reasoning"},
                      {"summary", json::array()},
                      {"content", json::array({{{"type", "reasoning_text"}, {"text", whole->reasoning}}})}});
  }
  if (!whole->content.empty() || whole->calls.empty()) {
    output.push_back(message_item(f, status, json::array({text_part(whole->content)})));
  }
  for (const chat::ToolCall& tc : whole->calls) output.push_back(function_call_item(tc, random_id("fc_"), status, true));
  json body = response_json(f, std::move(output), &*c.finish);
  body["timings"] = timings_json(c.finish->usage);
  send_json(res, body);
}

// The events of one streamed response. The message item opens with its first text (a
// reply that is only calls has none); a forced call streams as it is written, the calls
// the model chose follow whole once the reply is read.
class ResponseEvents final : public ReplyEvents {
 public:
  explicit ResponseEvents(const ResponseFrame& f) : f_(f) {}

  // (Events are appended statement by statement: the operands of + have no set order,
  // and sequence numbers must rise.)
  std::string start() override {
    std::string out = event("response.created", {{"response", response_json(f_, json::array(), nullptr)}});
    out += event("response.in_progress", {{"response", response_json(f_, json::array(), nullptr)}});
    return out;
  }
  std::string text(const std::string& piece) override {
    if (piece.empty()) return {};
    std::string out = open_message();
    text_ += piece;
    out += event("response.output_text.delta", where({{"delta", piece}, {"logprobs", json::array()}}));
    return out;
  }
  std::string finish(const Event& ev, const chat::ParsedReply& reply) override {
    std::string out = text(reply.content);
    const std::string status = item_status(ev);
    if (message_index_ < 0 && reply.calls.empty()) out += open_message();  // an empty reply is an empty message
    if (message_index_ >= 0) {
      const json item = message_item(f_, status, json::array({text_part(text_)}));
      out += event("response.output_text.done", where({{"text", text_}, {"logprobs", json::array()}}));
      out += event("response.content_part.done", where({{"part", text_part(text_)}}));
      out += event("response.output_item.done", {{"output_index", message_index_}, {"item", item}});
      items_.push_back(item);
    }
    for (size_t i = 0; i < reply.calls.size(); ++i) {
      const chat::ToolCall& tc = reply.calls[i];
      const bool streamed = i == 0 && call_index_ >= 0;  // opened by call(), its arguments sent
      const int index = streamed ? call_index_ : next_index_++;
      const std::string id = streamed ? call_item_id_ : random_id("fc_");
      if (!streamed) {
        out += event("response.output_item.added", {{"output_index", index}, {"item", function_call_item(tc, id, "in_progress", false)}});
        out += event("response.function_call_arguments.delta", {{"item_id", id}, {"output_index", index}, {"delta", tc.arguments}});
      }
      out += event("response.function_call_arguments.done", {{"item_id", id}, {"output_index", index}, {"arguments", tc.arguments}});
      const json item = function_call_item(tc, id, status, true);
      out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
      items_.push_back(item);
    }
    json done = response_json(f_, items_, &ev);
    done["timings"] = timings_json(ev.usage);
    out += event(ev.reason == FinishReason::kLength ? "response.incomplete" : "response.completed", {{"response", done}});
    return out;
  }
  std::string call(const CallDelta& delta) override {
    std::string out;
    if (delta.first) {
      call_index_ = next_index_++;
      call_item_id_ = random_id("fc_");
      const chat::ToolCall opened{delta.id, delta.name, ""};
      out += event("response.output_item.added",
                   {{"output_index", call_index_}, {"item", function_call_item(opened, call_item_id_, "in_progress", false)}});
    }
    if (!delta.arguments.empty()) {
      out += event("response.function_call_arguments.delta",
                   {{"item_id", call_item_id_}, {"output_index", call_index_}, {"delta", delta.arguments}});
    }
    return out;
  }
  std::string error(const ApiError& err) override {
    const json e = err.to_json()["error"];
    return event("error", {{"code", e.value("code", json(nullptr))}, {"message", e.value("message", "")}, {"param", nullptr}});
  }

 private:
  std::string event(const char* type, json data) {
    data["type"] = type;
    data["sequence_number"] = sequence_++;
    return std::string("event: ") + type + "\n" + sse_data(data);
  }
  json where(json data) const {
    data["item_id"] = f_.message_id;
    data["output_index"] = message_index_;
    data["content_index"] = 0;
    return data;
  }
  std::string open_message() {
    if (message_index_ >= 0) return {};
    message_index_ = next_index_++;
    std::string out = event("response.output_item.added",
                            {{"output_index", message_index_}, {"item", message_item(f_, "in_progress", json::array())}});
    out += event("response.content_part.added", where({{"part", text_part("")}}));
    return out;
  }

  const ResponseFrame& f_;
  int64_t sequence_ = 0;
  int next_index_ = 0;
  int message_index_ = -1;
  int call_index_ = -1;  // the forced call call() opened
  std::string call_item_id_;
  std::string text_;
  json items_ = json::array();
};

void stream_events(HttpServer::State& s, std::shared_ptr<Call> call, std::shared_ptr<const ResponseFrame> f,
                   httplib::Response& res) {
  serve_event_stream(s, res, [&s, call, f](httplib::DataSink& sink) {
    ResponseEvents events(*f);
    return stream_reply(s, *call, events, sink, "/v1/responses stream " + f->id);
  });
}

void handle_responses(HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  auto service = require_service(s);
  RequestLimits limits;
  limits.n_vocab = service->model_info().n_vocab;
  auto f = std::make_shared<ResponseFrame>();
  const json body = parse_body(req.body);
  f->request = parse_responses_request(body, limits, req.body);
  f->model = service->model_info().id;
  if (const json* t = JsonFields(body).get("tools")) f->tools = *t;
  if (const json* c = JsonFields(body).get("tool_choice")) f->tool_choice = *c;
  auto call = submit_call(s, f->request.chat);
  if (f->request.chat.stream) {
    stream_events(s, std::move(call), std::move(f), res);
  } else {
    respond_whole(s, *call, *f, res);
  }
}

}  // namespace

void add_responses_routes(HttpServer::State& s) {
  for (const char* path : {"/v1/responses", "/responses"}) {
    s.http.Post(path, [&s](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { handle_responses(s, req, res); });
    });
  }
}

}  // namespace keel::server
