// The sampler chain's stages, as free functions over a working logits row or candidate
// set, so each can be tested alone. The Sampler (sampling/sampler.h) runs them in order:
//
//   check_logits → apply_logit_bias → apply_penalties → collect_candidates
//   → top_k → typical_p → top_p → min_p → temperature + draw (or greedy argmax)
//
// Contract:
//  - Deterministic: ties are broken by lowest token id; every sum runs in a fixed order
//    in double precision. Nothing depends on other requests or on thread count.
//  - Canonical order is (logit descending, id ascending). A stage that needs it sorts the
//    set and sets `sorted`; stages that only remove candidates keep the order they got.
//  - Truncating stages always keep at least one candidate (the most likely).
//  - Masked tokens (-inf) never become candidates. A row where every token is masked
//    throws keel::Error(kInvalidArgument) from collect_candidates.
//  - Not thread-safe for a shared set; each Sampler owns its own buffers.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace keel::sampling {

struct Candidate {
  int32_t id;
  float logit;
};

// Canonical order: higher logit first, lower id first among equals.
bool candidate_before(const Candidate& a, const Candidate& b);

struct CandidateSet {
  std::vector<Candidate> items;
  bool sorted = false;  // items are in canonical order
};

// Throws kInvalidArgument naming the first NaN or +inf logit: the model's output is
// broken and no distribution can be formed from it. -inf is allowed (a masked token).
void check_logits(std::span<const float> logits);

// logits[id] += bias for each entry; ids must be < logits.size() (else kInvalidArgument
// naming the id). A sum that overflows to +inf is clamped to the largest finite float.
void apply_logit_bias(std::span<float> logits, const std::vector<std::pair<int32_t, float>>& bias);

struct PenaltyOptions {
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
};

// For each (token, count) in `counts` (token ids >= logits.size() are ignored: they
// cannot come from this vocabulary): repetition divides a positive logit / multiplies a
// non-positive one; then subtracts count * frequency + presence. Results clamp to finite
// from above.
void apply_penalties(std::span<float> logits, const std::map<int32_t, int32_t>& counts,
                     const PenaltyOptions& options);

// Every token whose logit is > -inf, in id order (sorted = false).
void collect_candidates(std::span<const float> logits, CandidateSet* set);

// The unmasked token with the highest logit, lowest id among equals; the same token the
// full chain picks at temperature 0 unless typical-p removed it. Throws like
// collect_candidates when every token is masked.
int32_t argmax_unmasked(std::span<const float> logits);

// Sorts into canonical order if not already.
void sort_candidates(CandidateSet* set);

// Normalised probabilities of set->items (softmax of the logits), in item order.
std::vector<double> candidate_probs(const CandidateSet& set);

void apply_top_k(CandidateSet* set, int32_t k);       // k <= 0: no-op
void apply_typical_p(CandidateSet* set, float p);     // p >= 1: no-op
void apply_top_p(CandidateSet* set, float p);         // p >= 1: no-op
void apply_min_p(CandidateSet* set, float min_p);     // min_p <= 0: no-op

// The most likely candidate, lowest id among equal logits. Set must be non-empty.
int32_t pick_greedy(const CandidateSet& set);

// Draws from softmax(logit / temperature) with u in [0, 1) (temperature > 0): walks the
// items in their current order and returns the first whose cumulative weight exceeds
// u * total.
int32_t pick_sampled(const CandidateSet& set, float temperature, double u);

}  // namespace keel::sampling
