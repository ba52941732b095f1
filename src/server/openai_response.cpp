#include "server/openai_response.h"

#include <algorithm>
#include <chrono>
#include <random>

namespace keel::server {
namespace {

json bytes_json(const std::string& piece) {
  json bytes = json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return bytes;
}

json tool_calls_json(const std::vector<chat::ToolCall>& calls, bool with_index) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id}, {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (with_index) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

const char* openai_finish_reason(engine::FinishReason reason) {
  return reason == engine::FinishReason::kLength ? "length" : "stop";
}

json usage_json(const engine::Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

json timings_json(const engine::Usage& usage) {
  const int64_t prompt_n = usage.prompt_tokens - usage.cached_tokens;
  // predicted_ms spans tokens 2..n (the first comes with the prefill), as generation_ms does.
  const int64_t timed_n = std::max<int64_t>(0, usage.completion_tokens - 1);
  auto per_token = [](double ms, int64_t n) { return n > 0 ? ms / double(n) : 0.0; };
  auto per_second = [](double ms, int64_t n) { return ms > 0 ? 1e3 * double(n) / ms : 0.0; };
  return {{"cache_n", usage.cached_tokens},
          {"prompt_n", prompt_n},
          {"prompt_ms", usage.prompt_ms},
          {"prompt_per_token_ms", per_token(usage.prompt_ms, prompt_n)},
          {"prompt_per_second", per_second(usage.prompt_ms, prompt_n)},
          {"predicted_n", usage.completion_tokens},
          {"predicted_ms", usage.generation_ms},
          {"predicted_per_token_ms", per_token(usage.generation_ms, timed_n)},
          {"predicted_per_second", per_second(usage.generation_ms, timed_n)}};
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string make_response_id(Endpoint endpoint) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

ResponseBuilder::ResponseBuilder(const CompletionRequest& request, std::string id,
                                 int64_t created, std::string model, PieceLookup piece, int index)
    : endpoint_(request.endpoint),
      logprobs_(request.generation.sampling.reports_logprobs()),
      include_usage_(request.stream && request.include_usage),
      id_(std::move(id)),
      created_(created),
      model_(std::move(model)),
      piece_(std::move(piece)),
      index_(index) {}

json ResponseBuilder::envelope(const char* object) const {
  return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_},
          {"system_fingerprint", "keel"}};
}

json ResponseBuilder::chat_logprob_entry(const std::string& piece, float logprob) const {
  return {{"token", sanitize_utf8(piece)}, {"logprob", logprob}, {"bytes", bytes_json(piece)}};
}

void ResponseBuilder::set_echo(std::string prompt_text, std::string first_token_piece) {
  echo_ = Echo{std::move(prompt_text), std::move(first_token_piece), {}, false};
}

void ResponseBuilder::add_prompt_logprobs(const std::vector<engine::TokenLogprob>& scored) {
  if (echo_) echo_->scored.insert(echo_->scored.end(), scored.begin(), scored.end());
}

json ResponseBuilder::logprobs_json(const std::vector<engine::TokenLogprob>& logprobs,
                                    size_t text_offset, bool with_echo) const {
  if (!logprobs_) return nullptr;
  if (endpoint_ == Endpoint::kChat) {
    json content = json::array();
    for (const auto& lp : logprobs) {
      json entry = chat_logprob_entry(lp.text, lp.logprob);
      json top = json::array();
      for (const auto& [tok, tlp] : lp.top) top.push_back(chat_logprob_entry(piece_(tok), tlp));
      entry["top_logprobs"] = std::move(top);
      content.push_back(std::move(entry));
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
  }
  // Legacy completions format: parallel arrays.
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  size_t offset = text_offset;
  if (with_echo && echo_) {
    // The prompt's tokens first. Their pieces add up to more than the prompt text when it
    // begins with BOS or a tokenizer's leading space: offsets count from where the pieces
    // meet the text, i.e. without that surplus.
    size_t pieces = echo_->first_piece.size();
    for (const auto& lp : echo_->scored) pieces += lp.text.size();
    const size_t surplus = pieces > echo_->text.size() ? pieces - echo_->text.size() : 0;
    const auto text_pos = [&](size_t piece_pos) {
      return std::min(piece_pos > surplus ? piece_pos - surplus : 0, echo_->text.size());
    };
    tokens.push_back(sanitize_utf8(echo_->first_piece));
    token_logprobs.push_back(nullptr);
    top.push_back(nullptr);
    offsets.push_back(0);
    offset = echo_->first_piece.size();
    for (const auto& lp : echo_->scored) {
      tokens.push_back(sanitize_utf8(lp.text));
      token_logprobs.push_back(lp.logprob);
      json alternatives = json::object();
      for (const auto& [tok, tlp] : lp.top) alternatives[sanitize_utf8(piece_(tok))] = tlp;
      top.push_back(std::move(alternatives));
      offsets.push_back(text_pos(offset));
      offset += lp.text.size();
    }
    offset = echo_->text.size();
  }
  for (const auto& lp : logprobs) {
    tokens.push_back(sanitize_utf8(lp.text));
    token_logprobs.push_back(lp.logprob);
    json alternatives = json::object();
    for (const auto& [tok, tlp] : lp.top) alternatives[sanitize_utf8(piece_(tok))] = tlp;
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    offset += lp.text.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

json ResponseBuilder::full(const std::string& text,
                           const std::vector<engine::TokenLogprob>& logprobs,
                           engine::FinishReason reason, const engine::Usage& usage,
                           const std::vector<chat::ToolCall>& calls, const std::string& reasoning) const {
  json choice = {{"index", index_}, {"logprobs", logprobs_json(logprobs, 0, true)},
                 {"finish_reason", calls.empty() || reason == engine::FinishReason::kLength
                                       ? openai_finish_reason(reason) : "tool_calls"}};
  json out;
  if (endpoint_ == Endpoint::kChat) {
    out = envelope("chat.completion");
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
    if (!reasoning.empty()) choice["message"]["reasoning_content"] = reasoning;
    if (!calls.empty()) {
      if (text.empty()) choice["message"]["content"] = nullptr;
      choice["message"]["tool_calls"] = tool_calls_json(calls, false);
    }
  } else {
    out = envelope("text_completion");
    choice["text"] = echo_ ? echo_->text + text : text;
  }
  out["choices"] = json::array({std::move(choice)});
  out["usage"] = usage_json(usage);
  return out;
}

json ResponseBuilder::choice(json body) const {
  json out = envelope(endpoint_ == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array({std::move(body)});
  if (include_usage_) out["usage"] = nullptr;
  return out;
}

std::vector<json> ResponseBuilder::start_chunks() const {
  if (endpoint_ != Endpoint::kChat) return {};
  return {choice({{"index", index_},
                  {"delta", {{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}},
                  {"logprobs", nullptr},
                  {"finish_reason", nullptr}})};
}

json ResponseBuilder::delta_chunk(const std::string& text,
                                  const std::vector<engine::TokenLogprob>& logprobs) {
  if (echo_pending()) {
    // The first chunk carries the prompt (and its scores, which come with the first event).
    json lp = logprobs_json(logprobs, 0, true);
    echo_->sent = true;
    stream_offset_ = echo_->text.size() + text.size();
    return choice({{"text", echo_->text + text}, {"index", index_}, {"logprobs", std::move(lp)},
                   {"finish_reason", nullptr}});
  }
  json lp = logprobs_json(logprobs, stream_offset_, false);
  stream_offset_ += text.size();
  if (endpoint_ == Endpoint::kChat) {
    return choice({{"index", index_}, {"delta", {{"content", text}}}, {"logprobs", std::move(lp)},
                   {"finish_reason", nullptr}});
  }
  return choice({{"text", text}, {"index", index_}, {"logprobs", std::move(lp)},
                 {"finish_reason", nullptr}});
}

json ResponseBuilder::reasoning_delta_chunk(const std::string& text,
                                            const std::vector<engine::TokenLogprob>& logprobs) {
  json lp = logprobs_json(logprobs, stream_offset_, false);
  return choice({{"index", index_}, {"delta", {{"reasoning_content", text}}}, {"logprobs", std::move(lp)},
                 {"finish_reason", nullptr}});
}

json ResponseBuilder::tool_calls_chunk(const std::vector<chat::ToolCall>& calls) const {
  return choice({{"index", index_}, {"delta", {{"tool_calls", tool_calls_json(calls, true)}}}, {"logprobs", nullptr},
                 {"finish_reason", nullptr}});
}

json ResponseBuilder::tool_call_delta_chunk(const CallDelta& d) const {
  json call = {{"index", 0}};
  if (d.first) {
    call["id"] = d.id;
    call["type"] = "function";
    call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
  } else {
    call["function"] = {{"arguments", d.arguments}};
  }
  return choice({{"index", index_}, {"delta", {{"tool_calls", json::array({std::move(call)})}}}, {"logprobs", nullptr},
                 {"finish_reason", nullptr}});
}

json ResponseBuilder::finish_chunk(engine::FinishReason reason, bool tool_calls) const {
  if (endpoint_ == Endpoint::kChat) {
    return choice({{"index", index_}, {"delta", json::object()}, {"logprobs", nullptr},
                   {"finish_reason", tool_calls && reason != engine::FinishReason::kLength
                                         ? "tool_calls" : openai_finish_reason(reason)}});
  }
  return choice({{"text", ""}, {"index", index_}, {"logprobs", nullptr},
                 {"finish_reason", openai_finish_reason(reason)}});
}

json ResponseBuilder::usage_chunk(const engine::Usage& usage) const {
  json out = envelope(endpoint_ == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

}  // namespace keel::server
