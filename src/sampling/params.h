// SamplingParams — everything a request says about how to pick its next token.
//
// Contract:
//  - A plain value type; copy freely. validate() checks every field for range and NaN and
//    throws keel::Error(kInvalidArgument) naming the first offending field. The Sampler
//    validates on construction, so a Sampler never holds out-of-range options.
//  - Neutral values disable a stage: temperature 1 (0 = greedy), top_k 0, top_p 1,
//    min_p 0, typical_p 1, repeat_penalty 1, presence/frequency 0, penalty_last_n 0.
//  - logit_bias token ids are checked against the vocabulary at sampling time (the
//    vocabulary size is not known here).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace keel::sampling {

struct SamplingParams {
  // 0 → greedy (argmax, lowest id wins ties); > 0 divides the logits before the draw.
  float temperature = 1.0f;
  int32_t top_k = 0;        // keep the k most likely; 0 = off
  float top_p = 1.0f;       // nucleus: smallest set with cumulative prob >= top_p; (0, 1]
  float min_p = 0.0f;       // keep tokens with p >= min_p * p_max; [0, 1]
  float typical_p = 1.0f;   // locally typical sampling mass; (0, 1], 1 = off

  // Penalties over the last penalty_last_n accepted tokens (llama.cpp semantics):
  // repeat_penalty divides a positive logit / multiplies a negative one once per distinct
  // token; then logit -= count * frequency_penalty + (count > 0) * presence_penalty.
  float repeat_penalty = 1.0f;     // > 0
  float presence_penalty = 0.0f;   // [-2, 2] in OpenAI's API; any finite value here
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;     // window; 0 = penalties off, -1 = every accepted token

  // Added to a token's logit before anything else. -inf bans the token; +inf and NaN are
  // rejected (a certain token is expressed with a large finite bias).
  std::vector<std::pair<int32_t, float>> logit_bias;

  uint64_t seed = 0;           // the RNG stream; same seed → same draws on every platform
  bool logprobs = false;       // report the chosen token's logprob (a pass over the vocabulary)
  int32_t top_logprobs = 0;    // how many alternatives to report per token; >= 0; > 0 implies logprobs

  bool reports_logprobs() const { return logprobs || top_logprobs > 0; }

  void validate() const;
};

}  // namespace keel::sampling
