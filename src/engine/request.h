// Requests and their event channels — the only things the HTTP layer and the engine
// thread share.
//
// A RequestHandle is the caller's end of one request: a thread-safe channel of events
// plus a cancel flag. Waiting with a timeout is a poll: it never affects the request
// (DESIGN.md rule 1 — a timeout never cancels work). cancel() asks the engine to finish
// the request at its next step boundary; the engine then sends exactly one Finish event
// with reason kCancelled. Dropping the handle cancels the request cleanly.
//
// Every request ends with exactly one Finish event (reason stop | length | cancelled |
// deadline | error); no event follows it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace keel::engine {

enum class FinishReason { kStop, kLength, kCancelled, kDeadline, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", ...

struct TokenLogprob {
  int32_t token = 0;
  std::string text;  // the token's piece (may be an incomplete UTF-8 fragment as bytes)
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // top-n alternatives (token, logprob)
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  // Engine-measured times (wall clock, ms): prompt_ms from admission to the first sampled
  // token (the prefill of the uncached prompt tokens, queue wait excluded); generation_ms
  // from the first sampled token to the last, i.e. the time of tokens 2..completion_tokens.
  // Both 0 when no token was sampled.
  double prompt_ms = 0.0;
  double generation_ms = 0.0;
};

struct Event {
  enum class Kind { kDelta, kFinish };
  Kind kind = Kind::kDelta;
  // kDelta: text that became complete (valid UTF-8, stop strings withheld), the tokens
  // that produced it, and their logprobs when asked for.
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;
  // Request::prompt_logprobs: the scores of prompt tokens 1.. (token 0 has none), in the
  // first delta, before any generated token.
  std::vector<TokenLogprob> prompt_logprobs;
  // kFinish:
  FinishReason reason = FinishReason::kStop;
  std::string stop_word;  // kStop by a stop string: that string (empty: end of generation)
  std::string error;  // for kError: what failed, naming the cause
  Usage usage;
};

class RequestChannel;  // shared between handle and engine (engine/channel.h)

class RequestHandle {
 public:
  RequestHandle() = default;
  explicit RequestHandle(std::shared_ptr<RequestChannel> channel);
  RequestHandle(RequestHandle&&) noexcept;
  RequestHandle& operator=(RequestHandle&&) noexcept;
  RequestHandle(const RequestHandle&) = delete;
  RequestHandle& operator=(const RequestHandle&) = delete;
  ~RequestHandle();  // cancels the request if it has not finished

  // Next event, waiting at most `timeout`. nullopt means nothing arrived in time; the
  // request goes on untouched. After the Finish event, returns nullopt immediately.
  std::optional<Event> next(std::chrono::milliseconds timeout);
  void cancel();
  bool finished() const;  // the Finish event has been taken
  uint64_t id() const;

 private:
  std::shared_ptr<RequestChannel> channel_;
};

}  // namespace keel::engine
