// The engine thread: each step ends queued requests that were cancelled or expired,
// admits new ones (prefix lookup), honours cancels and deadlines of running ones, plans
// one batch (decode tokens + prefill chunks), runs it under a catch, samples per slot and
// sends the output. Every request leaves through end_slot() or finish_job(), which send
// its one Finish event.
#include <algorithm>
#include <utility>

#include "core/error.h"
#include "core/fault.h"
#include "core/log.h"
#include "engine/engine_impl.h"

namespace keel::engine {

void Engine::Impl::run() {
  while (true) {
    try {
      if (!step()) return;
      snapshot_slots();
    } catch (const std::exception& e) {
      // step() handles every failure it expects; reaching here is a bug. End what is
      // running rather than leave clients waiting, and keep serving.
      log_error(std::string("engine: unexpected error outside a batch: ") + e.what());
      for (Slot& slot : slots) {
        if (slot.busy()) end_slot(slot, FinishReason::kError, std::string("engine error: ") + e.what());
      }
      recheck_cache = true;
    }
  }
}

bool Engine::Impl::step() {
  std::vector<std::pair<QueuedRequest, FinishReason>> dropped;  // queued jobs that end unserved
  std::vector<QueuedRequest> admitted;
  bool cancel_all = false;
  {
    EngineShared& s = *shared;
    std::unique_lock<std::mutex> lock(s.mutex);
    s.wake.wait(lock, [&] { return s.stop || !s.queue.empty() || s.active > 0; });
    if (s.stop && s.queue.empty() && s.active == 0) return false;
    cancel_all = s.cancel_all;
    const auto now = Clock::now();
    for (auto it = s.queue.begin(); it != s.queue.end();) {
      std::optional<FinishReason> reason;
      if (cancel_all || it->channel->cancel_requested()) {
        reason = FinishReason::kCancelled;
      } else if (it->request.deadline && now >= *it->request.deadline) {
        reason = FinishReason::kDeadline;
      }
      if (reason) {
        dropped.emplace_back(std::move(*it), *reason);
        it = s.queue.erase(it);
      } else {
        ++it;
      }
    }
    int64_t free_slots = static_cast<int64_t>(slots.size()) - s.active;
    while (free_slots > 0 && !s.queue.empty()) {
      admitted.push_back(std::move(s.queue.front()));
      s.queue.pop_front();
      --free_slots;
      ++s.active;
    }
    s.stats.queue_depth = static_cast<int64_t>(s.queue.size());
  }
  for (auto& [job, reason] : dropped) finish_job(job, reason, "");
  for (QueuedRequest& job : admitted) admit(std::move(job));

  // Cancellation and deadlines of running requests, at this step boundary.
  const auto now = Clock::now();
  for (Slot& slot : slots) {
    if (!slot.busy()) continue;
    if (cancel_all || slot.channel->cancel_requested()) {
      end_slot(slot, FinishReason::kCancelled, "");
    } else if (slot.request.deadline && now >= *slot.request.deadline) {
      end_slot(slot, FinishReason::kDeadline, "");
    } else if (slot.state == Slot::State::kGenerating) {
      try {
        if (!make_room(slot)) end_slot(slot, FinishReason::kLength, "");
      } catch (const std::exception& e) {
        end_slot(slot, FinishReason::kError, std::string("context shift failed: ") + e.what());
        recheck_cache = true;
      }
    }
  }

  std::vector<SlotDemand> demands;
  for (size_t i = 0; i < slots.size(); ++i) {
    const Slot& slot = slots[i];
    if (!slot.busy()) continue;
    SlotDemand d;
    d.slot = static_cast<int32_t>(i);
    d.admitted = slot.admitted;
    d.remaining = static_cast<int64_t>(slot.tokens.size()) - backend->length(slot.seq);
    // Only a lone sampled token is a decode; a prompt, or what a lossy context shift left
    // to recompute, is prefilled in chunks.
    d.decoding = slot.state == Slot::State::kGenerating && d.remaining == 1;
    demands.push_back(d);
  }
  if (demands.empty()) {
    if (recheck_cache) check_cache("after ending requests");
    return true;
  }
  std::vector<SlotShare> plan = plan_batch(demands, options.batch_tokens, rotation++);
  limit_scored_rows(&plan);

  // Shape: batch entries grouped per slot, positions consecutive from length(seq).
  std::vector<BatchEntry> batch;
  for (const SlotShare& share : plan) {
    Slot& slot = slots[share.slot];
    int64_t len = backend->length(slot.seq);
    for (int64_t i = 0; i < share.n_tokens; ++i) {
      int64_t pos = len + i;
      // Logits where the next token is sampled (after the last unfed token), and where a
      // scored prompt's next token is scored.
      bool want = pos == static_cast<int64_t>(slot.tokens.size()) - 1 || scores_prompt_at(slot, pos);
      batch.push_back({slot.tokens[static_cast<size_t>(pos)], pos, slot.seq, want});
    }
  }

  const auto t0 = Clock::now();
  try {
    fault_point("engine.forward");
    backend->forward(batch, &logits);
    size_t n_want = static_cast<size_t>(std::count_if(batch.begin(), batch.end(), [](const BatchEntry& e) { return e.want_logits; }));
    if (logits.size() != n_want * static_cast<size_t>(n_vocab)) {
      throw Error(ErrorCode::kInternal, "forward returned " + std::to_string(logits.size()) + " logits for " +
                                            std::to_string(n_want) + " rows of " + std::to_string(n_vocab));
    }
  } catch (const std::exception& e) {
    record_step(std::chrono::duration<double>(Clock::now() - t0).count(), true);
    fail_batch(plan, e.what());
    return true;
  }

  // Score and sample per slot, in plan order; a failure here is the slot's alone.
  size_t row = 0;
  for (const SlotShare& share : plan) {
    Slot& slot = slots[share.slot];
    const int64_t end = backend->length(slot.seq);
    const int64_t first = end - share.n_tokens;
    std::optional<std::string> failed;
    for (int64_t pos = first; pos < end && !failed; ++pos) {
      if (!scores_prompt_at(slot, pos)) continue;
      const float* row_ptr = logits.data() + row++ * static_cast<size_t>(n_vocab);
      try {
        const sampling::TokenScore score = sampling::score_token(
            std::span<const float>(row_ptr, n_vocab), slot.tokens[static_cast<size_t>(pos + 1)], slot.request.prompt_logprobs);
        TokenLogprob lp;
        lp.token = slot.tokens[static_cast<size_t>(pos + 1)];
        lp.text = backend->token_piece(lp.token);
        lp.logprob = score.logprob;
        for (const sampling::TokenLogprob& alt : score.top) lp.top.emplace_back(alt.token, alt.logprob);
        slot.pending.prompt_logprobs.push_back(std::move(lp));
      } catch (const std::exception& e) {
        failed = std::string("scoring the prompt failed: ") + e.what();
      }
    }
    bool want = end == static_cast<int64_t>(slot.tokens.size());
    if (failed) {
      row += want ? 1 : 0;
      {
        std::lock_guard<std::mutex> lock(shared->mutex);
        ++shared->stats.isolated_failures;
      }
      end_slot(slot, FinishReason::kError, *failed);
      continue;
    }
    if (!want) continue;  // prefill continues next step
    const float* row_ptr = logits.data() + row * static_cast<size_t>(n_vocab);
    ++row;
    if (slot.request.max_tokens == 0) {  // prefill only: nothing is sampled
      end_slot(slot, FinishReason::kLength, "");
      continue;
    }
    std::optional<FinishReason> done;
    try {
      fault_point("engine.sample");
      sampling::SampleResult sampled = slot.sampler->sample(std::span<const float>(row_ptr, n_vocab), slot.json.get());
      slot.state = Slot::State::kGenerating;
      done = slot.accept_token(sampled, *backend);
      // Without context shift the context bounds prompt + completion.
      if (!done && !options.context_shift && static_cast<int64_t>(slot.tokens.size()) >= options.n_ctx) {
        done = FinishReason::kLength;
      }
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(shared->mutex);
        ++shared->stats.isolated_failures;
      }
      end_slot(slot, FinishReason::kError, std::string("sampling failed: ") + e.what());
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(shared->mutex);
      ++shared->stats.generated_tokens;
    }
    if (done) end_slot(slot, *done, "");
  }
  record_step(std::chrono::duration<double>(Clock::now() - t0).count(), false);
  if (options.check_kv || recheck_cache) check_cache("after a step");
  return true;
}

void Engine::Impl::finish_job(QueuedRequest& job, FinishReason reason, const std::string& error) {
  count_finish(reason);
  Event done;
  done.reason = reason;
  done.error = error;
  done.usage.prompt_tokens = static_cast<int64_t>(job.request.prompt.size());
  job.channel->finish(std::move(done));
}

// Bookkeeping before the Finish event goes out, so a client that reads it and at once
// submits again, or reads stats(), sees the slot free and the request counted.
void Engine::Impl::count_finish(FinishReason reason) {
  std::lock_guard<std::mutex> lock(shared->mutex);
  ++shared->stats.requests_finished[static_cast<int>(reason)];
  if (reason == FinishReason::kCancelled) ++shared->stats.cancellations;
  if (shared->queue.empty() && shared->active == 0) shared->drained.notify_all();
}

void Engine::Impl::limit_scored_rows(std::vector<SlotShare>* plan) const {
  int64_t budget = kScoredRowsPerStep;
  std::vector<SlotShare> kept;
  for (SlotShare share : *plan) {
    const Slot& slot = slots[share.slot];
    if (slot.request.prompt_logprobs >= 0) {
      const int64_t len = backend->length(slot.seq);
      const int64_t scored = std::min(share.n_tokens, std::max<int64_t>(0, slot.n_prompt - 1 - len));
      if (scored > budget) share.n_tokens = budget;  // the rest of the prompt next step
      budget -= std::min(scored, budget);
      if (share.n_tokens == 0) continue;
    }
    kept.push_back(share);
  }
  *plan = std::move(kept);
}

std::shared_ptr<const sampling::TokenBytes> Engine::Impl::json_token_bytes() {
  if (!token_bytes) {
    std::vector<std::string> bytes(static_cast<size_t>(n_vocab));
    std::vector<uint8_t> end(static_cast<size_t>(n_vocab));
    for (int32_t id = 0; id < n_vocab; ++id) {
      bytes[static_cast<size_t>(id)] = backend->token_piece(id);
      end[static_cast<size_t>(id)] = backend->is_end_of_generation(id) ? 1 : 0;
    }
    token_bytes = std::make_shared<const sampling::TokenBytes>(std::move(bytes), std::move(end));
  }
  return token_bytes;
}

void Engine::Impl::admit(QueuedRequest job) {
  auto it = std::find_if(slots.begin(), slots.end(), [](const Slot& s) { return !s.busy(); });
  // The caller reserved a slot (shared->active) for this job, so one is free.
  Slot& slot = *it;
  slot = Slot{};
  slot.request = std::move(job.request);
  slot.channel = std::move(job.channel);
  slot.admitted = admissions++;
  slot.t_admitted = std::chrono::steady_clock::now();
  slot.tokens = slot.request.prompt;
  slot.n_prompt = static_cast<int64_t>(slot.tokens.size());
  slot.state = Slot::State::kPrefilling;
  try {
    fault_point("engine.admit");
    slot.sampler = std::make_unique<sampling::Sampler>(slot.request.sampling);
    slot.sampler->accept(slot.tokens);
    if (slot.request.json_object) {
      slot.json = std::make_unique<sampling::JsonConstraint>(json_token_bytes(), slot.request.json_constraint);
    }
    slot.decoder = backend->make_decoder(slot.request.render_special_tokens);
    slot.stop = std::make_unique<StopMatcher>(slot.request.stop);
    // Last: once open() returns, the slot owns a sequence that end_slot() releases.
    // Scored prompts need every position's logits: nothing is taken from the cache.
    Backend::Opened o = backend->open(slot.tokens, slot.request.prompt_logprobs >= 0 ? 0 : slot.n_prompt - 1);
    slot.seq = o.seq;
    slot.n_cached = o.reused;
  } catch (const std::exception& e) {
    // No sequence to release: finish here with end_slot's bookkeeping.
    QueuedRequest failed{std::move(slot.request), std::move(slot.channel)};
    slot = Slot{};
    {
      std::lock_guard<std::mutex> lock(shared->mutex);
      --shared->active;
      ++shared->stats.isolated_failures;
    }
    finish_job(failed, FinishReason::kError, std::string("admission failed: ") + e.what());
    return;
  }
  std::lock_guard<std::mutex> lock(shared->mutex);
  shared->stats.prompt_tokens += slot.n_prompt;
  shared->stats.cached_tokens += slot.n_cached;
}

void Engine::Impl::end_slot(Slot& slot, FinishReason reason, const std::string& error) {
  // Keep what was computed: a retry of the same prompt (a client that disconnected
  // during a long prefill) is then served from the cache.
  try {
    int64_t len = backend->length(slot.seq);
    if (!slot.shifted && len > 0) {
      backend->publish(slot.seq, std::span<const int32_t>(slot.tokens.data(), static_cast<size_t>(len)));
    }
  } catch (const std::exception& e) {
    log_warn(std::string("engine: could not cache the prefix of request ") +
             std::to_string(slot.channel->id()) + ": " + e.what());
  }
  try {
    backend->release(slot.seq);
  } catch (const std::exception& e) {
    log_error(std::string("engine: releasing the sequence of request ") + std::to_string(slot.channel->id()) +
              " failed: " + e.what());
    recheck_cache = true;  // checked at the end of the step (not here: no recursion)
  }
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    --shared->active;
  }
  count_finish(reason);
  try {
    slot.finish(reason, error);
  } catch (const std::exception& e) {
    // Flushing the output failed (e.g. the decoder): the request still gets its Finish.
    Event done;
    done.reason = FinishReason::kError;
    done.error = std::string("could not finish the response: ") + e.what();
    slot.channel->finish(std::move(done));
  }
  slot = Slot{};
}

// Makes room for the next decode token at the end of the context: a context shift when
// enabled, else false (the caller finishes with kLength).
bool Engine::Impl::make_room(Slot& slot) {
  int64_t len = backend->length(slot.seq);
  if (len < options.n_ctx) return true;
  if (!options.context_shift) return false;
  int64_t n_keep = std::min<int64_t>(options.n_keep, len - 1);
  int64_t n_discard = (len - n_keep) / 2;
  // The pending token stays at the end of tokens; positions the cache could not keep
  // (a sliding window that no longer covers them) are recomputed by the next steps.
  backend->shift(slot.seq, n_keep, n_discard);
  slot.tokens.erase(slot.tokens.begin() + n_keep, slot.tokens.begin() + n_keep + n_discard);
  slot.shifted = true;
  return true;
}

void Engine::Impl::fail_batch(const std::vector<SlotShare>& plan, const std::string& cause) {
  log_warn("engine: step failed, failing " + std::to_string(plan.size()) + " request(s): " + cause);
  {
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->stats.isolated_failures += static_cast<int64_t>(plan.size());
  }
  for (const SlotShare& share : plan) {
    Slot& slot = slots[share.slot];
    if (slot.busy()) end_slot(slot, FinishReason::kError, "step failed: " + cause);
  }
  check_cache("after a failed step");
}

void Engine::Impl::check_cache(const char* when) {
  recheck_cache = false;
  try {
    backend->check_invariants();
  } catch (const std::exception& e) {
    // The cache is inconsistent: nothing running can be trusted. Fail every request
    // rather than serve wrong output (end_slot does not re-check, so no recursion).
    log_error(std::string("engine: KV cache invariant violated ") + when + ": " + e.what());
    for (Slot& slot : slots) {
      if (slot.busy()) end_slot(slot, FinishReason::kError, std::string("KV cache invariant violated: ") + e.what());
    }
  }
}

// Slot states for stats(), after every step whatever path it took.
void Engine::Impl::snapshot_slots() {
  std::vector<SlotSnapshot> snapshot(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const Slot& slot = slots[i];
    SlotSnapshot& out = snapshot[i];
    out.id = static_cast<int32_t>(i);
    if (!slot.busy()) continue;
    out.state = slot.state == Slot::State::kPrefilling ? "prefilling" : "generating";
    out.request_id = slot.channel->id();
    try {
      out.n_past = backend->length(slot.seq);
    } catch (const std::exception&) {
      out.n_past = -1;  // a report, not worth failing anything over
    }
    out.n_prompt = slot.n_prompt;
    out.n_cached = slot.n_cached;
    out.n_generated = slot.n_generated;
  }
  std::lock_guard<std::mutex> lock(shared->mutex);
  shared->stats.slots = std::move(snapshot);
}

void Engine::Impl::record_step(double seconds, bool failed) {
  KvUsage kv = backend->kv_usage();
  int64_t empty_rows = backend->empty_attention_rows();
  std::lock_guard<std::mutex> lock(shared->mutex);
  EngineStats& st = shared->stats;
  const auto& bounds = step_seconds_bounds();
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (seconds <= bounds[i]) st.step_seconds_buckets[i] += 1;
  }
  st.step_seconds_buckets.back() += 1;
  st.step_seconds_sum += seconds;
  ++st.steps;
  if (failed) ++st.failed_steps;
  st.slots_busy = shared->active;
  st.kv_pages_used = kv.pages_used;
  st.kv_pages_cached = kv.pages_cached;
  st.kv_pages_total = kv.pages_total;
  st.empty_attention_rows = empty_rows;
}

}  // namespace keel::engine
