// Sampler — one request's token picker: the chain of sampling/stages.h over a logits row,
// its penalty window, its seeded RNG, and the logprobs it reports.
//
// Contract:
//  - Construction validates the params (keel::Error(kInvalidArgument) naming the field).
//  - sample(logits) reads one row [n_vocab] (not modified) and returns the chosen token;
//    it does not record it: call accept() for every token that becomes part of the
//    sequence (the engine also feeds prompt tokens, llama.cpp style, so penalties see them).
//  - Determinism: with temperature > 0 each sample() consumes exactly one RNG draw, and
//    with temperature 0 none, so the stream position depends only on how many tokens
//    this request sampled — never on batch composition, chunking, streaming or threads.
//    The RNG is bit-identical across platforms; the weights use libm exp(), so a draw
//    landing within rounding of a bucket boundary could in principle differ between libms.
//  - Bad rows (NaN/+inf, all masked, logit_bias id outside the vocabulary) throw
//    keel::Error(kInvalidArgument); the sampler stays usable and its RNG is not advanced.
//  - Not thread-safe; owned by the engine thread (one per request).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/history.h"
#include "sampling/json_constraint.h"
#include "sampling/logprobs.h"
#include "sampling/params.h"
#include "sampling/rng.h"
#include "sampling/stages.h"

namespace keel::sampling {

struct SampleResult {
  int32_t token = -1;
  float logprob = 0.0f;              // of `token` when asked for (sampling/logprobs.h), else 0
  std::vector<TokenLogprob> top;     // params.top_logprobs alternatives, most likely first
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  const SamplingParams& params() const { return params_; }

  // logits: [n_vocab]. `constraint` (may be null) masks tokens after the bias and
  // penalties, before the truncating stages (the request's own, e.g. JSON mode).
  SampleResult sample(std::span<const float> logits, const JsonConstraint* constraint = nullptr);
  void accept(int32_t token);
  void accept(std::span<const int32_t> tokens);
  // Forget accepted tokens and restart the RNG stream from params().seed.
  void reset();

 private:
  SamplingParams params_;
  TokenHistory history_;
  Rng rng_;
  std::vector<float> work_;  // [n_vocab] biased + penalised logits
  CandidateSet candidates_;
};

}  // namespace keel::sampling
