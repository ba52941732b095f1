// Request — everything a caller tells the engine about one generation.
//
// Contract:
//  - A plain value type, filled on the caller's (HTTP) thread and moved into
//    Engine::submit(), which validates it there (prompt length vs context, sampling
//    ranges, stop strings) and throws keel::Error(kInvalidArgument) naming the field.
//  - Tokens are already tokenized (BOS included when the model wants one); the engine
//    never tokenizes.
//  - The deadline is absolute (steady clock): past it the engine finishes the request
//    with reason kDeadline at the next step boundary, whether it is queued or running.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sampling/json_constraint.h"
#include "sampling/params.h"

namespace keel::engine {

// Prompt rows scored per engine step, over all requests (each needs a logits row; the
// memory plan reserves them): a scored prompt is prefilled this many tokens at a time.
inline constexpr int64_t kScoredRowsPerStep = 32;

struct Request {
  std::vector<int32_t> prompt;        // token ids; non-empty, shorter than the context
  sampling::SamplingParams sampling;  // includes seed, logprobs and top_logprobs (what each token reports)
  int32_t max_tokens = -1;            // completion tokens; -1 = until stop / context end; 0 = prefill only
  int32_t prompt_logprobs = -1;       // >= 0: score prompt tokens 1.. with that many alternatives (0-20);
                                      // the prompt is then computed in full (no prefix reuse)
  std::vector<std::string> stop;      // stop strings; matched across tokens, never emitted
  bool ignore_eos = false;            // keep going past end-of-generation tokens
  bool render_special_tokens = false; // control tokens appear in the text as written ("<|end|>"):
                                      // for readers of a format's markers (harmony channels)
  bool json_object = false;           // output constrained to one JSON object (sampling/json_constraint.h)
  sampling::JsonConstraintSpec json_constraint;  // json_object only: a schema, preludes (sampling/json_constraint.h)
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

}  // namespace keel::engine
