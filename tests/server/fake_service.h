// Test doubles for the server: a scripted event source and an InferenceService whose
// "model" tokenizes bytes (token id = byte value), so every route runs without a model.
#pragma once

#include <array>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "server/service.h"

namespace keel::server::test {

// Events are pushed by the test; next() waits for them like a real channel does.
class ScriptedSource : public EventSource {
 public:
  std::optional<engine::Event> next(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    ++polls_;
    cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
    if (events_.empty()) return std::nullopt;
    engine::Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  void cancel() override {
    {
      // Like the engine: cancelling a request that already finished changes nothing (the
      // server drops every handle when its response ends).
      std::lock_guard<std::mutex> lock(mutex_);
      if (finished_) return;
    }
    cancelled_.store(true);
    // Like the engine: a cancelled request ends with exactly one Finish(kCancelled).
    push(finish(engine::FinishReason::kCancelled));
  }
  void push(engine::Event e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (finished_) return;
      finished_ = e.kind == engine::Event::Kind::kFinish;
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  bool cancelled() const { return cancelled_.load(); }
  int polls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return polls_;
  }

  static engine::Event delta(std::string text, std::vector<int32_t> tokens = {}) {
    engine::Event e;
    e.kind = engine::Event::Kind::kDelta;
    e.text = std::move(text);
    e.tokens = std::move(tokens);
    return e;
  }
  static engine::Event finish(engine::FinishReason reason, engine::Usage usage = {}, std::string error = "") {
    engine::Event e;
    e.kind = engine::Event::Kind::kFinish;
    e.reason = reason;
    e.usage = usage;
    e.error = std::move(error);
    return e;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<engine::Event> events_;
  bool finished_ = false;
  int polls_ = 0;
  std::atomic<bool> cancelled_{false};
};

// The source handed to the server owns nothing the test needs after the response: it
// forwards to a shared ScriptedSource the test keeps.
class SharedSource : public EventSource {
 public:
  explicit SharedSource(std::shared_ptr<ScriptedSource> s) : s_(std::move(s)) {}
  ~SharedSource() override { s_->cancel(); }  // a dropped handle cancels, as RequestHandle does
  std::optional<engine::Event> next(std::chrono::milliseconds t) override { return s_->next(t); }
  void cancel() override { s_->cancel(); }

 private:
  std::shared_ptr<ScriptedSource> s_;
};

class FakeService : public InferenceService {
 public:
  // Called for each submit; by default answers "Hello" in two deltas.
  std::function<std::unique_ptr<EventSource>(engine::Request)> on_submit;
  std::atomic<int> submitted{0};
  engine::Request last_request;  // guarded by mutex_
  mutable std::mutex mutex_;
  std::atomic<bool> harmony{false};  // model_info().harmony_output
  mutable std::array<int64_t, 3> last_fim_budgets{};  // prefix, suffix, extra of the last infill

  ModelInfo model_info() const override {
    ModelInfo info;
    info.id = "fake-model";
    info.n_vocab = 512;
    info.n_ctx = 256;
    info.n_parallel = 2;
    info.chat_template = "fake";
    info.harmony_output = harmony.load();
    return info;
  }
  std::vector<int32_t> prompt_tokens(const CompletionRequest& r, size_t prompt = 0) const override {
    if (r.endpoint == Endpoint::kCompletion && !r.prompts.at(prompt).text) return r.prompts.at(prompt).tokens;
    std::string text;
    if (r.endpoint == Endpoint::kChat) {
      for (const auto& m : r.messages) text += m.role + ": " + m.content + "\n";
    } else {
      text = *r.prompts.at(prompt).text;
    }
    std::vector<int32_t> out = {1};
    for (unsigned char c : text) out.push_back(c);
    return out;
  }
  std::string chat_prompt(const CompletionRequest& r) const override {
    std::string text;
    for (const auto& m : r.messages) text += m.role + ": " + m.content + "\n";
    return text + r.assistant_prefix;
  }
  // PRE=500 prefix SUF=501 suffix MID=502 middle (bytes as ids), the context's texts first.
  std::vector<int32_t> infill_tokens(const tokenizer::FimRequest& r) const override {
    last_fim_budgets = {r.prefix_max, r.suffix_max, r.extra_max};
    std::vector<int32_t> out = {1};
    auto bytes = [&](std::string_view t) { for (unsigned char c : t) out.push_back(c); };
    for (const auto& c : r.extra) bytes(c.text);
    out.push_back(500);
    bytes(r.prefix);
    out.push_back(501);
    bytes(r.suffix);
    out.push_back(502);
    bytes(r.middle);
    return out;
  }
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool) const override {
    std::vector<int32_t> out;
    if (add_special) out.push_back(1);
    for (unsigned char c : text) out.push_back(c);
    return out;
  }
  std::string detokenize(const std::vector<int32_t>& tokens) const override {
    std::string out;
    for (int32_t t : tokens) out += token_piece(t);
    return out;
  }
  std::string token_piece(int32_t token) const override {
    return token < 256 ? std::string(1, static_cast<char>(token)) : "<" + std::to_string(token) + ">";
  }
  std::unique_ptr<EventSource> submit(engine::Request request) override {
    ++submitted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last_request = request;
    }
    if (on_submit) return on_submit(std::move(request));
    auto s = std::make_shared<ScriptedSource>();
    engine::Usage usage{static_cast<int64_t>(request.prompt.size()), 2, 0};
    s->push(ScriptedSource::delta("Hel", {72}));
    s->push(ScriptedSource::delta("lo", {108}));
    s->push(ScriptedSource::finish(engine::FinishReason::kStop, usage));
    return std::make_unique<SharedSource>(s);
  }
  engine::EngineStats stats() const override {
    engine::EngineStats s;
    s.queue_depth = 1;
    s.slots_busy = 1;
    s.prompt_tokens = 10;
    return s;
  }
  std::vector<SlotInfo> slots() const override { return {{0, "idle", 0, 0}, {1, "generating", 12, 7}}; }
};

}  // namespace keel::server::test
