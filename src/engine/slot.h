// Slot — one running request inside the engine thread: its sequence in the KV cache,
// its tokens, sampler, detokenizer, stop matcher and the output not yet sent.
//
// Contract:
//  - Engine-thread only.
//  - tokens holds the sequence's tokens: the committed ones (length(seq) of them, read
//    from the backend, never cached here) followed, while generating, by the one sampled
//    token that the next step feeds.
//  - accept_token() turns a sampled token into output (text through the UTF-8-safe
//    decoder and the stop matcher) and says whether the request ends there.
//  - finish() sends the final delta (for reasons that keep text) and the one Finish
//    event; the caller then publishes and releases the sequence.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/channel.h"
#include "engine/request_spec.h"
#include "engine/stop_matcher.h"
#include "sampling/sampler.h"

namespace keel::engine {

struct Slot {
  enum class State { kFree, kPrefilling, kGenerating };

  State state = State::kFree;
  uint64_t admitted = 0;  // admission order
  Request request;
  std::shared_ptr<RequestChannel> channel;
  SeqId seq = 0;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int64_t n_prompt = 0, n_cached = 0, n_generated = 0;
  // For Usage's times: admission, the first and the latest sampled token.
  std::chrono::steady_clock::time_point t_admitted, t_first_token, t_last_token;
  bool shifted = false;  // a context shift renumbered positions: never publish
  std::unique_ptr<sampling::Sampler> sampler;
  std::unique_ptr<sampling::JsonConstraint> json;  // request.json_object only
  std::unique_ptr<TokenDecoder> decoder;
  std::unique_ptr<StopMatcher> stop;
  Event pending;  // delta being assembled: tokens whose text is held back, and their text

  bool busy() const { return state != State::kFree; }

  // Takes the sampled token. Returns the reason when the request ends with it.
  std::optional<FinishReason> accept_token(const sampling::SampleResult& sampled,
                                           const Backend& backend);
  // Sends the remaining output and the Finish event. Reasons kStop/kLength/kDeadline
  // flush held text; kCancelled/kError drop it (nobody wants a partial tail then).
  void finish(FinishReason reason, const std::string& error);

 private:
  void take_text(const std::string& text);  // through the stop matcher into pending
  void send_pending();
};

}  // namespace keel::engine
