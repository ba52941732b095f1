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

#include "engine/request.h"

namespace keel::engine {

// Full definition lives with the implementation (engine/request_spec.h): prompt tokens,
// sampling parameters (sampling module), max tokens, stop strings, logprobs, deadline.
struct Request;

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

struct EngineStats {
  int64_t queue_depth = 0;
  int64_t slots_busy = 0;
  int64_t requests_finished[5] = {};  // by FinishReason
  int64_t prompt_tokens = 0, generated_tokens = 0, cached_tokens = 0;
  int64_t cancellations = 0, isolated_failures = 0;
  int64_t kv_pages_used = 0, kv_pages_cached = 0, kv_pages_total = 0;
  int64_t empty_attention_rows = 0;
  std::vector<double> step_seconds_buckets;  // histogram (see engine/metrics)
};

}  // namespace keel::engine
