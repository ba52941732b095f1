// KV quality — how much a quantized KV cache changes a model's predictions, measured
// against a full-precision KV baseline on the same prompt (issue 9: silent quantized-KV
// garbage is a recurring failure elsewhere; here it is a number).
//
// Method: the baseline cache (f32 K and V by default) generates `n_generate` tokens
// greedily after the prompt. Each candidate K/V type pair then reads the same prompt and
// is teacher-forced along the baseline's tokens, so both produce next-token distributions
// for the same positions. Per candidate: mean and max KL(P_baseline || P_candidate) over
// those positions, the fraction whose top-1 token agrees, and the first position where
// greedy output would diverge (the first disagreement: before it the two greedy runs
// are identical, so it is exactly where a greedy candidate's text departs).
//
// Contract:
//  - measure_kv_quality() is a pure function of the model, the prompt and the options
//    (batch-invariant kernels: results do not depend on the thread count). It allocates
//    its own small caches (prompt + n_generate tokens) and never touches an engine's.
//  - Throws keel::Error(kInvalidArgument) for an empty prompt, a token outside the
//    vocabulary or n_generate < 1; KV type errors (e.g. a head dimension that is not a
//    multiple of the block size) come from kv::KvCache as keel::Error.
//  - Thread-safety: the Model is only read; concurrent calls are fine.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensor/types.h"

namespace keel::model {
class Model;
}

namespace keel::engine {

struct KvTypePair {
  tensor::DType k = tensor::DType::kF16;
  tensor::DType v = tensor::DType::kF16;
  std::string name() const;  // "q8_0/q4_0"
};

struct KvQualityOptions {
  int32_t n_generate = 32;                  // positions compared (>= 1)
  KvTypePair baseline{tensor::DType::kF32, tensor::DType::kF32};
  bool flash_attention = true;
  int32_t threads = 0;                      // 0 = all hardware threads
  // A candidate is "degraded" when its mean KL exceeds max_mean_kl or its top-1 agreement
  // falls below min_top1 (defaults: clearly worse than q8_0/q4_0 on a healthy model).
  double max_mean_kl = 0.1;
  double min_top1 = 0.9;
};

struct KvQualityResult {
  KvTypePair types;
  int64_t positions = 0;         // distributions compared
  double mean_kl = 0, max_kl = 0;  // nats
  double top1_agreement = 0;     // in [0, 1]
  int64_t first_divergence = -1; // index into the generated tokens; -1: never diverged
  bool degraded = false;
};

struct KvQualityReport {
  KvTypePair baseline;
  int64_t prompt_tokens = 0;
  std::vector<int32_t> baseline_tokens;  // the baseline's greedy continuation
  std::vector<KvQualityResult> results;  // one per candidate, in the given order
};

KvQualityReport measure_kv_quality(const model::Model& model, std::span<const int32_t> prompt,
                                   std::span<const KvTypePair> candidates,
                                   const KvQualityOptions& options);

// KL(p || q) of two logit rows (softmax of each), in nats; computed in double.
double kl_divergence_logits(std::span<const float> p_logits, std::span<const float> q_logits);

// One line per candidate, e.g. "q4_0/q4_0 vs f32/f32: mean KL 0.0123, max 0.0456, top-1
// 97.0%, greedy diverges at token 12" — for logs and the sweep's table.
std::string describe(const KvQualityResult& result, const KvTypePair& baseline);

// A short English prompt for start-up checks (`keel serve --kv-check`).
const char* kv_check_prompt();

}  // namespace keel::engine
