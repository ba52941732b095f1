// Engine — one thread that owns the model, the KV cache, the slots and the samplers.
// Nothing else touches them (DESIGN.md §Rules). Other threads talk to it only through
// submit() and the RequestHandle it returns.
//
// Contract:
//  - submit() validates the request (prompt length vs context, parameters) on the
//    caller's thread and queues it; it throws keel::Error(kInvalidArgument) for a bad
//    request and keel::Error(kBusy) when the queue (EngineOptions::max_queue) is full.
//    It never blocks on the engine thread's work.
//  - Each step builds one batch from the decode tokens of generating slots plus prefill
//    chunks of admitted prompts within the per-step token budget (continuous batching,
//    chunked prefill). Cancellation, deadlines and failures are handled at step
//    boundaries, never inside a kernel; every request gets exactly one Finish event.
//  - A step that throws fails only the requests in that batch (error event naming the
//    cause), rolls back their uncommitted KV, re-checks the cache invariants, and the
//    engine goes on.
//  - Same request + seed → same tokens, whatever it was batched with, however its prompt
//    was chunked, whether its prefix came from the cache.
//  - Thread-safety: submit(), stats() and shutdown() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/request.h"
#include "engine/request_spec.h"

namespace keel::engine {

struct EngineOptions {
  int32_t n_parallel = 1;      // slots (--parallel)
  int32_t n_ctx = 4096;        // context per slot (--ctx)
  int32_t batch_tokens = 512;  // per-step token budget (--batch)
  int32_t max_queue = 64;      // queued requests beyond the slots (--queue)
  bool context_shift = false;  // --context-shift
  int32_t n_keep = 0;          // --keep
  bool flash_attention = true;
  int32_t threads = 0;         // 0 = all hardware threads
  bool check_kv = false;       // run the KV invariant checker after every step
};

// One slot as of the end of the last step (for GET /slots).
struct SlotSnapshot {
  int32_t id = 0;
  const char* state = "idle";  // "idle" | "prefilling" | "generating"
  uint64_t request_id = 0;     // RequestHandle::id() of its request; 0 when idle
  int64_t n_past = 0;          // positions in the KV cache
  int64_t n_prompt = 0, n_cached = 0, n_generated = 0;
};

struct EngineStats {
  int64_t queue_depth = 0;
  int64_t slots_busy = 0;
  int64_t requests_finished[5] = {};  // by FinishReason
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_tokens = 0;
  int64_t cancellations = 0, isolated_failures = 0;
  int64_t kv_pages_used = 0, kv_pages_cached = 0, kv_pages_total = 0;
  int64_t empty_attention_rows = 0;
  // Step-time histogram: step_seconds_buckets[i] counts steps that took at most
  // step_seconds_bounds()[i] seconds (cumulative, Prometheus style); the last bucket is
  // +Inf and equals steps.
  std::vector<double> step_seconds_buckets;
  double step_seconds_sum = 0;
  int64_t steps = 0, failed_steps = 0;
  int64_t faults_injected = 0;
  std::vector<SlotSnapshot> slots;  // n_parallel entries
};

// Upper bounds (seconds) of the step-time histogram's finite buckets.
const std::vector<double>& step_seconds_bounds();

class Engine {
 public:
  // Takes the backend (model + KV cache + tokenizer) and starts the engine thread.
  // Throws keel::Error(kInvalidArgument) for out-of-range options.
  Engine(std::unique_ptr<Backend> backend, const EngineOptions& options);
  ~Engine();  // shutdown(0): cancels what is still running, joins
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues. Throws keel::Error(kInvalidArgument) for a bad request (empty
  // prompt, prompt not shorter than the context, token id out of the vocabulary, bad
  // sampling parameters, empty stop string), kBusy when n_parallel + max_queue requests
  // are already in flight or the engine is shutting down.
  RequestHandle submit(Request request);

  EngineStats stats() const;
  const EngineOptions& options() const { return options_; }

  // Stops accepting, lets in-flight requests finish for up to `timeout`, then cancels the
  // rest (each gets its Finish event) and joins the engine thread. Idempotent.
  void shutdown(std::chrono::milliseconds timeout);

 private:
  struct Impl;
  EngineOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::engine
