// Engine internals shared by engine.cpp (the public API, any thread) and engine_step.cpp
// (the engine thread's loop). Private to src/engine.
//
// Threading: EngineShared (guarded by its mutex) is all that callers and the engine thread
// share; the members under "engine thread only" in Engine::Impl are touched by that
// thread alone (and by the constructor before the thread starts).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/batch_plan.h"
#include "engine/channel.h"
#include "engine/engine.h"
#include "engine/slot.h"

namespace keel::engine {

using Clock = std::chrono::steady_clock;

struct QueuedRequest {  // a request not yet in a slot
  Request request;
  std::shared_ptr<RequestChannel> channel;
};

// Everything the engine thread shares with callers (guarded by `mutex`). The engine never
// sleeps while it has work, so a cancel needs no wake-up: it is seen at the next step.
struct EngineShared {
  std::mutex mutex;
  std::condition_variable wake;     // the engine thread waits here
  std::condition_variable drained;  // shutdown() waits here
  std::deque<QueuedRequest> queue;
  int64_t active = 0;          // busy slots
  bool accepting = true;
  bool cancel_all = false;     // shutdown timed out: end everything
  bool stop = false;           // exit once nothing is left
  EngineStats stats;
};

struct Engine::Impl {
  Impl(std::unique_ptr<Backend> b, const EngineOptions& o)
      : backend(std::move(b)), options(o), n_vocab(backend->n_vocab()), slots(o.n_parallel) {
    shared->stats.step_seconds_buckets.assign(step_seconds_bounds().size() + 1, 0.0);
    shared->stats.slots.resize(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) shared->stats.slots[i].id = static_cast<int32_t>(i);
  }

  void run();
  bool step();  // false when the engine should exit

  // Engine-thread helpers.
  void finish_job(QueuedRequest& job, FinishReason reason, const std::string& error);
  void count_finish(FinishReason reason);
  void admit(QueuedRequest job);
  void end_slot(Slot& slot, FinishReason reason, const std::string& error);
  bool make_room(Slot& slot);
  void fail_batch(const std::vector<SlotShare>& plan, const std::string& cause);
  void check_cache(const char* when);
  void record_step(double seconds, bool failed);
  void snapshot_slots();

  std::unique_ptr<Backend> backend;
  const EngineOptions options;
  const int32_t n_vocab;
  std::shared_ptr<EngineShared> shared = std::make_shared<EngineShared>();
  std::atomic<uint64_t> next_id{1};
  std::thread thread;
  std::mutex join_mutex;

  // Engine thread only.
  std::vector<Slot> slots;
  uint64_t admissions = 0;
  uint64_t rotation = 0;
  bool recheck_cache = false;  // something failed mid-way: run the invariant checker
  std::vector<float> logits;  // [n_want][n_vocab]
  // Every token's output bytes, for JSON-mode requests: built at the first one, then shared.
  std::shared_ptr<const sampling::TokenBytes> token_bytes;
  std::shared_ptr<const sampling::TokenBytes> json_token_bytes();
  // Caps the prompt rows scored in one step at kScoredRowsPerStep (their logits rows are
  // what the memory plan reserves); shares cut to nothing wait for the next step.
  void limit_scored_rows(std::vector<SlotShare>* plan) const;
  // Whether the row at `pos` scores the prompt token after it (Request::prompt_logprobs).
  static bool scores_prompt_at(const Slot& slot, int64_t pos) {
    return slot.request.prompt_logprobs >= 0 && pos < slot.n_prompt - 1;
  }
};

}  // namespace keel::engine
