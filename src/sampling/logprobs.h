// Log-probabilities reported with each token (OpenAI's `logprobs` / `top_logprobs`).
//
// Which distribution: log-softmax of the logits AFTER logit bias and penalties, BEFORE
// temperature and the truncating stages (top-k, typical-p, top-p, min-p). Why:
//  - it is OpenAI's semantics (the model's distribution as the request shaped it with
//    logit_bias / penalties; temperature and nucleus settings do not change logprobs), so
//    clients written against OpenAI read the numbers the same way;
//  - it is finite for every reported token; a post-truncation distribution gives -inf to
//    every pruned alternative, which JSON cannot carry;
//  - greedy and sampled requests report comparable numbers (temperature-independent).
// llama-server's default (post-sampling probabilities) is deliberately not followed.
//
// Contract: `set` holds every unmasked token (before truncation), non-empty. Masked tokens
// have probability 0 and are never listed, so fewer than n alternatives may come back.
// Alternatives are ordered most likely first, lowest id first among equals.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/stages.h"

namespace keel::sampling {

struct TokenLogprob {
  int32_t token;
  float logprob;
};

class LogprobTable {
 public:
  // Computes log-sum-exp over `set` once; the table is then valid for that row only.
  explicit LogprobTable(const CandidateSet& set);

  // Logprob of `logit` under this row's distribution.
  float logprob_of(float logit) const;
  // The n most likely tokens (n clamped to the number of candidates).
  std::vector<TokenLogprob> top(const CandidateSet& set, int32_t n) const;

 private:
  double log_sum_exp_;
};

// A prompt token's score: its logprob under the model's raw distribution at the position
// before it (softmax of the logits as the model gave them: no bias, penalties or
// constraint — nothing of the request applies to tokens it did not sample), with the n
// most likely alternatives. Throws as check_logits / collect_candidates do.
struct TokenScore {
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
};
TokenScore score_token(std::span<const float> logits, int32_t token, int32_t n_top);

}  // namespace keel::sampling
