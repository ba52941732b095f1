// POST /v1/messages: Anthropic's Messages API (its SDKs and the tools built on them). The
// request is read by anthropic_request.h into a chat request and runs exactly as
// /v1/chat/completions with one choice (calls read by the same ToolCallReader). The reply
// is a `message`: content blocks (text, then a tool_use block per call with its input as
// an object), stop_reason end_turn / max_tokens / stop_sequence (with stop_sequence) /
// tool_use, usage. A stream is Anthropic's events: message_start, content_block_start /
// content_block_delta (text_delta) / content_block_stop for the text (opened with its first
// piece), the same with input_json_delta per call (a forced call's input as it is written,
// the others whole once the reply is read),
// message_delta (stop_reason, output_tokens) and message_stop; `event: NAME` + `data`.
// A harmony model's reasoning is not sent (its content is). An error after the headers is
// an `error` event.
#include <random>
#include <string>

#include "core/log.h"
#include "server/anthropic_request.h"
#include "server/completion_call.h"
#include "server/sse.h"

namespace keel::server {
namespace {

using engine::Event;
using engine::FinishReason;

std::string message_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = "msg_";
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

std::string stop_reason(const Event& finish, bool calls) {
  if (calls) return "tool_use";
  if (finish.reason == FinishReason::kLength) return "max_tokens";
  return finish.stop_word.empty() ? "end_turn" : "stop_sequence";
}

json stop_sequence(const Event& finish, bool calls) {
  return !calls && !finish.stop_word.empty() ? json(finish.stop_word) : json(nullptr);
}

// A call's arguments as the object Anthropic's tool_use.input is (they are JSON object text).
json call_input(const chat::ToolCall& call) {
  json input = json::parse(call.arguments, nullptr, false);
  return input.is_object() ? input : json::object();
}

json tool_use_block(const chat::ToolCall& call, bool with_input) {
  return {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", with_input ? call_input(call) : json::object()}};
}

json usage_json(int64_t input, int64_t output, int64_t cached) {
  return {{"input_tokens", input}, {"output_tokens", output}, {"cache_read_input_tokens", cached}};
}

void respond_whole(HttpServer::State& s, Call& call, const std::string& model, httplib::Response& res) {
  const std::optional<WholeReply> whole = read_single(s, call, res);
  if (!whole) return;
  const Collected& c = whole->collected;
  const std::string& text = whole->content;
  const std::vector<chat::ToolCall>& calls = whole->calls;
  json content = json::array();
  if (!text.empty() || calls.empty()) content.push_back({{"type", "text"}, {"text", text}});
  for (const chat::ToolCall& tc : calls) content.push_back(tool_use_block(tc, true));
  const engine::Usage& u = c.finish->usage;
  json body = {{"id", message_id()},
               {"type", "message"},
               {"role", "assistant"},
               {"model", model},
               {"content", content},
               {"stop_reason", stop_reason(*c.finish, !calls.empty())},
               {"stop_sequence", stop_sequence(*c.finish, !calls.empty())},
               {"usage", usage_json(u.prompt_tokens, u.completion_tokens, u.cached_tokens)},
               {"timings", timings_json(u)}};
  send_json(res, body);
}

// The events of one streamed message: the text block opens with its first piece; a forced
// call (tool_choice any / tool) streams its input as it is written, the calls the model
// chose follow whole once the reply is read.
class MessageEvents final : public ReplyEvents {
 public:
  MessageEvents(std::string model, int64_t prompt_tokens) : model_(std::move(model)), prompt_tokens_(prompt_tokens) {}

  std::string start() override {
    return event("message_start", {{"message",
                                    {{"id", message_id()},
                                     {"type", "message"},
                                     {"role", "assistant"},
                                     {"model", model_},
                                     {"content", json::array()},
                                     {"stop_reason", nullptr},
                                     {"stop_sequence", nullptr},
                                     {"usage", usage_json(prompt_tokens_, 0, 0)}}}});
  }
  std::string text(const std::string& piece) override {
    if (piece.empty()) return {};
    std::string out = open_text();
    out += event("content_block_delta", {{"index", text_index_}, {"delta", {{"type", "text_delta"}, {"text", piece}}}});
    return out;
  }
  std::string finish(const Event& ev, const chat::ParsedReply& reply) override {
    std::string out = text(reply.content);
    if (text_index_ < 0 && reply.calls.empty()) out += open_text();  // an empty reply is an empty text block
    if (text_index_ >= 0) out += event("content_block_stop", {{"index", text_index_}});
    for (size_t i = 0; i < reply.calls.size(); ++i) {
      const chat::ToolCall& tc = reply.calls[i];
      if (i == 0 && call_index_ >= 0) {  // opened by call(), its input sent
        out += event("content_block_stop", {{"index", call_index_}});
        continue;
      }
      const int index = next_index_++;
      out += event("content_block_start", {{"index", index}, {"content_block", tool_use_block(tc, false)}});
      out += event("content_block_delta",
                   {{"index", index}, {"delta", {{"type", "input_json_delta"}, {"partial_json", call_input(tc).dump()}}}});
      out += event("content_block_stop", {{"index", index}});
    }
    const bool calls = !reply.calls.empty();
    out += event("message_delta", {{"delta", {{"stop_reason", stop_reason(ev, calls)}, {"stop_sequence", stop_sequence(ev, calls)}}},
                                   {"usage", {{"output_tokens", ev.usage.completion_tokens}}}});
    out += event("message_stop", json::object());
    return out;
  }
  std::string call(const CallDelta& delta) override {
    std::string out;
    if (delta.first) {
      call_index_ = next_index_++;
      const chat::ToolCall opened{delta.id, delta.name, ""};
      out += event("content_block_start", {{"index", call_index_}, {"content_block", tool_use_block(opened, false)}});
    }
    if (!delta.arguments.empty()) {  // the arguments as written: JSON text, as input_json_delta carries
      out += event("content_block_delta",
                   {{"index", call_index_}, {"delta", {{"type", "input_json_delta"}, {"partial_json", delta.arguments}}}});
    }
    return out;
  }
  std::string error(const ApiError& err) override {
    const json e = err.to_json()["error"];
    return event("error", {{"error", {{"type", e.value("type", "api_error")}, {"message", e.value("message", "")}}}});
  }

 private:
  std::string event(const char* type, json data) {
    data["type"] = type;
    return std::string("event: ") + type + "\n" + sse_data(data);
  }
  std::string open_text() {
    if (text_index_ >= 0) return {};
    text_index_ = next_index_++;
    return event("content_block_start", {{"index", text_index_}, {"content_block", {{"type", "text"}, {"text", ""}}}});
  }

  std::string model_;
  int64_t prompt_tokens_;
  int next_index_ = 0;
  int text_index_ = -1;
  int call_index_ = -1;  // the forced call call() opened
};

void stream_message(HttpServer::State& s, std::shared_ptr<Call> call, std::string model, httplib::Response& res) {
  serve_event_stream(s, res, [&s, call, model](httplib::DataSink& sink) {
    MessageEvents events(model, static_cast<int64_t>(call->prompts.front().size()));
    return stream_reply(s, *call, events, sink, "/v1/messages stream");
  });
}

void handle_messages(HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  auto service = require_service(s);
  RequestLimits limits;
  limits.n_vocab = service->model_info().n_vocab;
  CompletionRequest request = parse_anthropic_request(parse_body(req.body), limits, req.body);
  auto call = submit_call(s, request);
  if (request.stream) {
    stream_message(s, std::move(call), service->model_info().id, res);
  } else {
    respond_whole(s, *call, service->model_info().id, res);
  }
}

// POST /v1/messages/count_tokens: the prompt a Messages request would submit, counted
// ({"input_tokens": n}); nothing runs. max_tokens may be left out here, as Anthropic allows.
void count_tokens(HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  auto service = require_service(s);
  RequestLimits limits;
  limits.n_vocab = service->model_info().n_vocab;
  json body = parse_body(req.body);
  if (!body.contains("max_tokens")) body["max_tokens"] = 1;
  CompletionRequest request = parse_anthropic_request(body, limits);
  plan_tool_calls(&request, service->model_info().tool_syntax);  // as submit_call renders it
  send_json(res, {{"input_tokens", service->prompt_tokens(request).size()}});
}

}  // namespace

void add_anthropic_routes(HttpServer::State& s) {
  s.http.Post("/v1/messages", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { handle_messages(s, req, res); });
  });
  s.http.Post("/v1/messages/count_tokens", [&s](const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] { count_tokens(s, req, res); });
  });
}

}  // namespace keel::server
