#include "sampling/sampler.h"

#include <optional>

namespace keel::sampling {
namespace {

const SamplingParams& validated(const SamplingParams& params) {
  params.validate();
  return params;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params)
    : params_(validated(params)), history_(params.penalty_last_n), rng_(params.seed) {}

SampleResult Sampler::sample(std::span<const float> logits, const JsonConstraint* constraint) {
  check_logits(logits);
  work_.assign(logits.begin(), logits.end());
  apply_logit_bias(work_, params_.logit_bias);
  apply_penalties(work_, history_.counts(),
                  {.repeat_penalty = params_.repeat_penalty,
                   .presence_penalty = params_.presence_penalty,
                   .frequency_penalty = params_.frequency_penalty});
  if (constraint) constraint->mask(work_);
  const bool want_logprobs = params_.reports_logprobs();
  SampleResult result;
  if (params_.temperature == 0.0f && params_.typical_p >= 1.0f && !want_logprobs) {
    // top-k, top-p and min-p always keep the argmax, so greedy needs no candidate set.
    result.token = argmax_unmasked(work_);
    return result;
  }
  collect_candidates(work_, &candidates_);

  // Logprobs describe the full (untruncated, untempered) distribution.
  std::optional<LogprobTable> table;
  if (want_logprobs) {
    table.emplace(candidates_);
    if (params_.top_logprobs > 0) result.top = table->top(candidates_, params_.top_logprobs);
  }

  apply_top_k(&candidates_, params_.top_k);
  apply_typical_p(&candidates_, params_.typical_p);
  apply_top_p(&candidates_, params_.top_p);
  apply_min_p(&candidates_, params_.min_p);

  result.token = params_.temperature == 0.0f
                     ? pick_greedy(candidates_)
                     : pick_sampled(candidates_, params_.temperature, rng_.uniform());
  if (table) result.logprob = table->logprob_of(work_[static_cast<size_t>(result.token)]);
  return result;
}

void Sampler::accept(int32_t token) { history_.push(token); }

void Sampler::accept(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) history_.push(t);
}

void Sampler::reset() {
  history_.clear();
  rng_ = Rng(params_.seed);
}

}  // namespace keel::sampling
