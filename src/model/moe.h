// Mixture-of-experts FFN block: a router picks the top-k experts of each row and their
// outputs are summed with softmax weights over the selected router logits.
//
// Batch invariance: a row's experts, weights and sum order (slot 0..k-1, i.e. by router
// logit descending, ties to the lower expert index) depend on that row only; rows of one
// expert are gathered into one matmul, whose per-row results do not depend on the others.
#pragma once

#include <cstdint>

#include "model/forward_pass.h"
#include "model/weights.h"

namespace keel::model {

struct MoeWeights {
  Linear router;         // [n_embd → n_expert], bias optional
  ExpertMatrices gate;   // [n_embd → n_ff_expert] × n_expert
  ExpertMatrices up;
  ExpertMatrices down;   // [n_ff_expert → n_embd] × n_expert
  int64_t n_used = 0;    // experts per token (top-k)
};

// gpt-oss's expert activation: clamped SwiGLU (alpha 1.702, limit 7).
struct MoeActivation {
  float alpha = 1.702f;
  float limit = 7.0f;
};

// out[n_rows][n_embd] = Σ_slots w_slot · down_e(act(gate_e(h), up_e(h)))
void moe_ffn(const ForwardPass& fp, const MoeWeights& w, const MoeActivation& act, const float* h,
             float* out);

}  // namespace keel::model
