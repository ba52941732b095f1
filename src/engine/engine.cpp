#include "engine/engine.h"

#include <utility>

#include "core/error.h"
#include "core/fault.h"
#include "engine/engine_impl.h"

namespace keel::engine {

const std::vector<double>& step_seconds_bounds() {
  static const std::vector<double> bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,   0.25,   0.5,   1.0,  2.5,   5.0, 10.0};
  return bounds;
}

namespace {

void validate_options(const EngineOptions& o) {
  auto bad = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, "engine options: " + what); };
  if (o.n_parallel < 1) throw bad("n_parallel (--parallel) must be >= 1, got " + std::to_string(o.n_parallel));
  if (o.n_ctx < 2) throw bad("n_ctx (--ctx) must be >= 2, got " + std::to_string(o.n_ctx));
  if (o.batch_tokens < 1) throw bad("batch_tokens (--batch) must be >= 1, got " + std::to_string(o.batch_tokens));
  if (o.max_queue < 0) throw bad("max_queue (--queue) must be >= 0, got " + std::to_string(o.max_queue));
  if (o.n_keep < 0 || o.n_keep >= o.n_ctx / 2) {
    throw bad("n_keep (--keep) must be in [0, n_ctx/2), got " + std::to_string(o.n_keep) +
              " with n_ctx " + std::to_string(o.n_ctx));
  }
}

}  // namespace


Engine::Engine(std::unique_ptr<Backend> backend, const EngineOptions& options) : options_(options) {
  validate_options(options);
  if (!backend) throw Error(ErrorCode::kInvalidArgument, "engine: no backend");
  impl_ = std::make_unique<Impl>(std::move(backend), options);
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

Engine::~Engine() { shutdown(std::chrono::milliseconds(0)); }

RequestHandle Engine::submit(Request request) {
  auto invalid = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); };
  const int64_t n_prompt = static_cast<int64_t>(request.prompt.size());
  if (n_prompt == 0) throw invalid("prompt is empty: at least one token is needed");
  if (n_prompt >= options_.n_ctx) {
    throw invalid("prompt has " + std::to_string(n_prompt) + " tokens but the context holds " +
                  std::to_string(options_.n_ctx) +
                  " (the prompt must leave room for at least one generated token)");
  }
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    int32_t t = request.prompt[i];
    if (t < 0 || t >= impl_->n_vocab) {
      throw invalid("prompt token " + std::to_string(i) + " has id " + std::to_string(t) +
                    ", outside the vocabulary [0, " + std::to_string(impl_->n_vocab) + ")");
    }
  }
  if (request.max_tokens < -1) {
    throw invalid("max_tokens must be >= 0 (0: prefill only; -1: no limit), got " + std::to_string(request.max_tokens));
  }
  if (request.prompt_logprobs < -1 || request.prompt_logprobs > 20) {
    throw invalid("prompt_logprobs must be in [0, 20] (or -1: off), got " + std::to_string(request.prompt_logprobs));
  }
  for (const std::string& s : request.stop) {
    if (s.empty()) throw invalid("stop strings must not be empty");
  }
  const auto& jc = request.json_constraint;
  if ((jc.schema || !jc.preludes.empty()) && !request.json_object) {
    throw invalid("a JSON schema or preludes need json_object (they shape the JSON object)");
  }
  request.sampling.validate();
  for (const auto& [token, bias] : request.sampling.logit_bias) {
    if (token < 0 || token >= impl_->n_vocab) {
      throw invalid("logit_bias token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                    std::to_string(impl_->n_vocab) + ")");
    }
  }

  auto channel = std::make_shared<RequestChannel>(impl_->next_id.fetch_add(1));
  EngineShared& s = *impl_->shared;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.accepting) throw Error(ErrorCode::kBusy, "engine is shutting down: request not accepted");
    int64_t capacity = options_.n_parallel + options_.max_queue;
    int64_t in_flight = static_cast<int64_t>(s.queue.size()) + s.active;
    if (in_flight >= capacity) {
      throw Error(ErrorCode::kBusy, "engine busy: " + std::to_string(s.active) + " requests running and " +
                                        std::to_string(s.queue.size()) + " queued (--parallel " +
                                        std::to_string(options_.n_parallel) + ", --queue " +
                                        std::to_string(options_.max_queue) + ")");
    }
    s.queue.push_back(QueuedRequest{std::move(request), channel});
    s.stats.queue_depth = static_cast<int64_t>(s.queue.size());
  }
  s.wake.notify_all();
  return RequestHandle(std::move(channel));
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(impl_->shared->mutex);
  EngineStats out = impl_->shared->stats;
  out.slots_busy = impl_->shared->active;  // live, not as of the last step
  out.queue_depth = static_cast<int64_t>(impl_->shared->queue.size());
  out.faults_injected = faults_injected();
  return out;
}

void Engine::shutdown(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> join_lock(impl_->join_mutex);
  if (!impl_->thread.joinable()) return;
  EngineShared& s = *impl_->shared;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.accepting = false;
    s.drained.wait_for(lock, timeout, [&] { return s.queue.empty() && s.active == 0; });
    s.cancel_all = true;
    s.stop = true;
  }
  s.wake.notify_all();
  impl_->thread.join();
}

}  // namespace keel::engine
