#include "engine_test_util.h"

#include <gtest/gtest.h>

#include "sampling/sampler.h"

namespace keel::engine::test {

Outcome collect(RequestHandle& handle, std::chrono::milliseconds limit) {
  Outcome out;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::optional<Event> ev = handle.next(std::chrono::milliseconds(50));
    if (!ev) continue;
    if (ev->kind == Event::Kind::kDelta) {
      out.tokens.insert(out.tokens.end(), ev->tokens.begin(), ev->tokens.end());
      out.text += ev->text;
      out.logprobs.insert(out.logprobs.end(), ev->logprobs.begin(), ev->logprobs.end());
      out.prompt_logprobs.insert(out.prompt_logprobs.end(), ev->prompt_logprobs.begin(), ev->prompt_logprobs.end());
      continue;
    }
    ++out.finishes;
    out.reason = ev->reason;
    out.stop_word = ev->stop_word;
    out.error = ev->error;
    out.usage = ev->usage;
    break;
  }
  EXPECT_EQ(out.finishes, 1) << "request did not finish within the limit";
  // After the Finish nothing more may come, and the handle says so at once.
  while (handle.next(std::chrono::milliseconds(0))) ++out.events_after;
  EXPECT_EQ(out.events_after, 0);
  EXPECT_TRUE(handle.finished());
  return out;
}

void Gate::install(FakeBackend& fake) {
  fake.on_forward = [this](std::span<const BatchEntry>) {
    std::unique_lock<std::mutex> lock(mutex_);
    entered_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  };
}

void Gate::wait_entered() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return entered_; });
}

void Gate::open() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
  }
  cv_.notify_all();
}

Request make_request(std::vector<int32_t> prompt, int32_t max_tokens, uint64_t seed, float temperature) {
  Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.seed = seed;
  r.sampling.temperature = temperature;
  return r;
}

Expected oracle(const FakeBackend& fake, const Request& r, int32_t n_ctx) {
  Expected e;
  sampling::Sampler sampler(r.sampling);
  sampler.accept(r.prompt);
  std::vector<int32_t> history = r.prompt;
  while (true) {
    std::vector<float> row = fake.logits_after(history);
    int32_t token = sampler.sample(row).token;
    sampler.accept(token);
    history.push_back(token);
    ++e.completion_tokens;
    if (!r.ignore_eos && fake.is_end_of_generation(token)) {
      e.reason = FinishReason::kStop;
      return e;
    }
    e.tokens.push_back(token);
    e.text += fake.token_piece(token);
    size_t first = std::string::npos;
    for (const std::string& stop : r.stop) first = std::min(first, e.text.find(stop));
    if (first != std::string::npos) {
      e.text.resize(first);
      e.reason = FinishReason::kStop;
      return e;
    }
    if ((r.max_tokens >= 0 && e.completion_tokens >= r.max_tokens) ||
        static_cast<int64_t>(history.size()) >= n_ctx) {
      e.reason = FinishReason::kLength;
      return e;
    }
  }
}

std::vector<int32_t> random_prompt(uint64_t seed, size_t n, int32_t n_vocab) {
  std::vector<int32_t> p;
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    p.push_back(2 + static_cast<int32_t>(s % static_cast<uint64_t>(n_vocab - 2)));
  }
  return p;
}

}  // namespace keel::engine::test
