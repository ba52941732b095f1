// Helpers for engine tests: collecting a request's events and running requests solo.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "fake_backend.h"

namespace keel::engine::test {

struct Outcome {
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason reason = FinishReason::kError;
  std::string stop_word;  // the finish event's
  std::string error;
  Usage usage;
  int finishes = 0;       // must be exactly 1
  int events_after = 0;   // events seen after the Finish (must be 0)
  std::vector<TokenLogprob> logprobs;
  std::vector<TokenLogprob> prompt_logprobs;
};

// Reads events until the Finish (waiting at most `limit` in total), then checks that no
// event follows it.
Outcome collect(RequestHandle& handle, std::chrono::milliseconds limit = std::chrono::seconds(60));

Request make_request(std::vector<int32_t> prompt, int32_t max_tokens, uint64_t seed = 0,
                     float temperature = 0.0f);

// Holds the engine thread inside FakeBackend::forward until open() — a long prefill
// without a clock.
class Gate {
 public:
  // Installs itself as fake.on_forward (replacing any hook).
  void install(FakeBackend& fake);
  void wait_entered();  // until the engine is inside forward
  void open();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool entered_ = false, open_ = false;
};

// The fresh-recomputation oracle: what a request must produce on `fake` with a context of
// n_ctx (no context shift), computed straight from the fake model's logits and a new
// Sampler, without the engine.
struct Expected {
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason reason = FinishReason::kStop;
  int64_t completion_tokens = 0;
};
Expected oracle(const FakeBackend& fake, const Request& request, int32_t n_ctx);

// A prompt of n tokens from ids [2, n_vocab), seeded.
std::vector<int32_t> random_prompt(uint64_t seed, size_t n, int32_t n_vocab);

}  // namespace keel::engine::test
