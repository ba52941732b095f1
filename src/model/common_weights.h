// Binding of the tensor groups most decoder architectures share, by their GGUF names
// (token_embd, output_norm, output, blk.N.attn_*, blk.N.ffn_*). Each architecture says
// what is required; shapes come from HParams.
#pragma once

#include <string>

#include "model/blocks.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace keel::model {

struct EmbeddingWeights {
  kernels::WeightMatrix token_embd;  // [n_embd, n_vocab]
  const float* output_norm = nullptr;
  kernels::WeightMatrix output;  // [n_embd, n_vocab]; token_embd when tied
};

// Binds token_embd (setting hp.n_vocab from it), output_norm and output (tied to
// token_embd when output.weight is absent).
EmbeddingWeights bind_embeddings(WeightBinder& b, HParams& hp);

struct AttentionBinding {
  bool qkv_bias_required = false;  // q/k/v biases must exist (else used when present)
  bool qk_norm_required = false;   // attn_q_norm / attn_k_norm must exist
  bool sinks_required = false;     // attn_sinks
};
AttentionWeights bind_attention(WeightBinder& b, const HParams& hp, int64_t layer,
                                const AttentionBinding& opts);

GatedFfnWeights bind_gated_ffn(WeightBinder& b, const HParams& hp, int64_t layer);

inline std::string blk(int64_t layer, const std::string& name) {
  return "blk." + std::to_string(layer) + "." + name;
}

}  // namespace keel::model
