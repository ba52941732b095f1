// OpenAI response objects for one request: the whole-response JSON (chat.completion,
// text_completion) and the streaming chunks (chat.completion.chunk, text_completion).
//
// Contract:
//  - A ResponseBuilder is made per request and fixes its id ("chatcmpl-…" / "cmpl-…"),
//    "created" and "model", so every chunk of one stream carries the same three.
//  - Chunk order for a stream: start_chunks() (chat: the assistant-role chunk), one
//    delta_chunk() per engine delta that has text or logprobs, tool_calls_chunk() when the
//    reply ended in function calls, finish_chunk(reason), then
//    usage_chunk() when stream_options.include_usage was set. With include_usage every
//    other chunk carries "usage": null, as OpenAI's do.
//  - Token pieces may be incomplete UTF-8: logprob "token" fields are made valid (U+FFFD)
//    and the exact bytes go in "bytes". Not thread-safe: one builder per request thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/json_io.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"

namespace keel::server {

// The token text for a token id (raw bytes); used for top_logprobs alternatives.
using PieceLookup = std::function<std::string(int32_t)>;

// "stop" / "length" for the finish reasons that end a response normally.
const char* openai_finish_reason(engine::FinishReason reason);

json usage_json(const engine::Usage& usage);
// llama-server's "timings" object (an extension OpenAI clients ignore): cache_n, prompt_n
// (tokens prefilled, the cached ones excluded), prompt_ms, predicted_n, predicted_ms and
// their per-token and per-second rates (0 where the time is 0), from the engine's times.
json timings_json(const engine::Usage& usage);

class ResponseBuilder {
 public:
  // `index`: the choice this builder writes (0 .. n-1; a request of n choices has n
  // builders sharing id and created).
  ResponseBuilder(const CompletionRequest& request, std::string id, int64_t created,
                  std::string model, PieceLookup piece, int index = 0);

  const std::string& id() const { return id_; }

  // Completions with `echo`: the prompt's text goes before the output (the whole
  // response's text, or the first chunk), and with logprobs its tokens go first in the
  // arrays — the first with a null logprob (nothing precedes it), the others with the
  // scores add_prompt_logprobs() delivers (the engine's Event::prompt_logprobs).
  void set_echo(std::string prompt_text, std::string first_token_piece);
  void add_prompt_logprobs(const std::vector<engine::TokenLogprob>& scored);
  // True until a chunk has carried the echo: the stream must still send one.
  bool echo_pending() const { return echo_ && !echo_->sent; }

  // Whole (non-streamed) response. With `calls` (chat), the message carries them as
  // tool_calls (content null when `text` is empty) and finish_reason is "tool_calls"
  // ("length" when max_tokens ended it: the arguments may be cut short).
  // A non-empty `reasoning` (chat; harmony's analysis channel) goes in the message's
  // reasoning_content.
  json full(const std::string& text, const std::vector<engine::TokenLogprob>& logprobs,
            engine::FinishReason reason, const engine::Usage& usage,
            const std::vector<chat::ToolCall>& calls = {}, const std::string& reasoning = "") const;

  std::vector<json> start_chunks() const;
  // Not const: legacy completion logprobs carry running text offsets.
  json delta_chunk(const std::string& text, const std::vector<engine::TokenLogprob>& logprobs);
  // A chat delta of reasoning text (delta.reasoning_content), with the logprobs given.
  json reasoning_delta_chunk(const std::string& text, const std::vector<engine::TokenLogprob>& logprobs);
  // A chat delta with the calls, each whole (index, id, type, name, arguments).
  json tool_calls_chunk(const std::vector<chat::ToolCall>& calls) const;
  // A chat delta with part of call 0 (the first part: id, type, name; then arguments).
  json tool_call_delta_chunk(const CallDelta& delta) const;
  // `tool_calls`: the choice ended in calls (finish_reason "tool_calls").
  json finish_chunk(engine::FinishReason reason, bool tool_calls = false) const;
  json usage_chunk(const engine::Usage& usage) const;

 private:
  json envelope(const char* object) const;
  json logprobs_json(const std::vector<engine::TokenLogprob>& logprobs, size_t text_offset, bool with_echo) const;
  json chat_logprob_entry(const std::string& piece, float logprob) const;
  json choice(json body) const;

  Endpoint endpoint_;
  bool logprobs_;
  bool include_usage_;
  std::string id_;
  int64_t created_;
  std::string model_;
  PieceLookup piece_;
  int index_;
  size_t stream_offset_ = 0;  // bytes of text streamed so far (legacy text_offset)
  struct Echo {
    std::string text;
    std::string first_piece;
    std::vector<engine::TokenLogprob> scored;  // prompt tokens 1..
    bool sent = false;
  };
  std::optional<Echo> echo_;
};

// Unix seconds now: the "created" of responses and of /v1/models.
int64_t unix_now();

// A fresh response id with the endpoint's prefix (random, 24 hex digits).
std::string make_response_id(Endpoint endpoint);

}  // namespace keel::server
