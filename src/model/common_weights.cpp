#include "model/common_weights.h"

#include "core/error.h"
#include "gguf/gguf.h"

namespace keel::model {

EmbeddingWeights bind_embeddings(WeightBinder& b, HParams& hp) {
  EmbeddingWeights e;
  const gguf::TensorInfo* t = b.file().find_tensor("token_embd.weight");
  if (!t || t->shape.size() < 2) {
    throw Error(ErrorCode::kNotFound, b.file().path() +
                                          ": missing tensor 'token_embd.weight' (expected shape [" +
                                          std::to_string(hp.n_embd) + ", n_vocab])");
  }
  hp.n_vocab = t->shape[1];
  e.token_embd = b.matrix("token_embd.weight", hp.n_embd, hp.n_vocab);
  e.output_norm = b.vector("output_norm.weight", hp.n_embd);
  e.output = b.has("output.weight") ? b.matrix("output.weight", hp.n_embd, hp.n_vocab)
                                    : e.token_embd;
  return e;
}

AttentionWeights bind_attention(WeightBinder& b, const HParams& hp, int64_t layer,
                                const AttentionBinding& opts) {
  AttentionWeights w;
  const int64_t q_dim = hp.n_head * hp.head_dim_k, k_dim = hp.n_head_kv * hp.head_dim_k;
  const int64_t v_dim = hp.n_head_kv * hp.head_dim_v, o_dim = hp.n_head * hp.head_dim_v;
  w.q = b.linear(blk(layer, "attn_q"), hp.n_embd, q_dim, opts.qkv_bias_required);
  w.k = b.linear(blk(layer, "attn_k"), hp.n_embd, k_dim, opts.qkv_bias_required);
  w.v = b.linear(blk(layer, "attn_v"), hp.n_embd, v_dim, opts.qkv_bias_required);
  w.o = b.linear(blk(layer, "attn_output"), o_dim, hp.n_embd);
  if (opts.qk_norm_required) {
    w.q_norm = b.vector(blk(layer, "attn_q_norm.weight"), hp.head_dim_k);
    w.k_norm = b.vector(blk(layer, "attn_k_norm.weight"), hp.head_dim_k);
  } else {
    w.q_norm = b.optional_vector(blk(layer, "attn_q_norm.weight"), hp.head_dim_k);
    w.k_norm = b.optional_vector(blk(layer, "attn_k_norm.weight"), hp.head_dim_k);
  }
  w.sinks = opts.sinks_required ? b.vector(blk(layer, "attn_sinks.weight"), hp.n_head)
                                : b.optional_vector(blk(layer, "attn_sinks.weight"), hp.n_head);
  return w;
}

GatedFfnWeights bind_gated_ffn(WeightBinder& b, const HParams& hp, int64_t layer) {
  if (hp.n_ff <= 0) {
    throw Error(ErrorCode::kInvalidFile,
                b.file().path() + ": metadata '" + hp.key("feed_forward_length") + "' missing");
  }
  GatedFfnWeights f;
  f.gate = b.linear(blk(layer, "ffn_gate"), hp.n_embd, hp.n_ff);
  f.up = b.linear(blk(layer, "ffn_up"), hp.n_embd, hp.n_ff);
  f.down = b.linear(blk(layer, "ffn_down"), hp.n_ff, hp.n_embd);
  return f;
}

}  // namespace keel::model
