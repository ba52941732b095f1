// llama-server's own completion request (POST /completion), read into the same
// CompletionRequest the OpenAI routes use.
//
// Contract:
//  - parse_llama_completion() takes the body (a JSON object) and returns a validated
//    request of one prompt and one choice, or throws ApiError 400 naming the parameter.
//  - Fields as llama-server reads them: prompt (text, token ids, or a list holding one of
//    either), n_predict (or max_tokens; absent or < 0: until end of generation or the
//    context), temperature, top_k, top_p, min_p, typical_p, repeat_penalty, repeat_last_n,
//    presence_penalty, frequency_penalty, seed (< 0: random), stop, ignore_eos, logit_bias
//    (an object, or [[token id, bias or false], ...]), n_probs, json_schema, stream,
//    return_tokens. Absent samplers take llama-server's defaults (temperature 0.8, top_k
//    40, top_p 0.95, min_p 0.05), not OpenAI's.
//  - Samplers keel does not have are a 400 when they would act (grammar, mirostat,
//    dry_multiplier, xtc_probability, top_n_sigma, dynatemp_range), never silently
//    dropped; fields that only tune llama-server's slots (cache_prompt, id_slot, n_keep,
//    samplers, ...) are ignored: keel's prefix cache is always on.
//  - Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/json_io.h"
#include "server/openai_request.h"

namespace keel::server {

struct LlamaCompletionRequest {
  CompletionRequest request;  // Endpoint::kCompletion, one prompt, n = 1
  int32_t n_probs = 0;        // alternatives per token in completion_probabilities (0: none)
  bool return_tokens = false; // the token ids of each piece of text ("tokens")
};

LlamaCompletionRequest parse_llama_completion(const json& body, const RequestLimits& limits,
                                              std::string_view raw_body = {});

}  // namespace keel::server
