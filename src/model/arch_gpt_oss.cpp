// gpt-oss: pre-norm attention with q/k/v/o biases and per-head attention sinks, sliding
// window on even layers, NEOX rope with YaRN scaling (incl. its magnitude factor), and a
// mixture-of-experts FFN (router with bias, top-k, softmax over the selected logits,
// clamped-SwiGLU experts with biases). post_attention_norm is the FFN's input norm.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"
#include "model/architecture.h"
#include "model/blocks.h"
#include "model/common_weights.h"
#include "model/moe.h"

namespace keel::model {

namespace {

struct Layer {
  const float* attn_norm = nullptr;
  AttentionWeights attn;
  const float* ffn_norm = nullptr;  // stored as post_attention_norm
  MoeWeights moe;
};

class GptOss : public Architecture {
 public:
  void plan(const gguf::GgufFile& f, HParams& hp) const override {
    if (hp.n_expert <= 0 || hp.n_expert_used <= 0 || hp.n_ff_expert <= 0) {
      throw Error(ErrorCode::kInvalidFile,
                  f.path() + ": gpt-oss needs expert_count, expert_used_count and "
                             "expert_feed_forward_length");
    }
    hp.layers.assign(static_cast<size_t>(hp.n_layer), LayerPlan{});
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      LayerPlan& l = hp.layers[il];
      l.window = il % 2 == 0 ? hp.sliding_window : 0;
      l.rope = rope_from_hparams(hp, kernels::RopeMode::kNeox, hp.rope_base, true);
      l.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
    }
  }

  void bind(WeightBinder& b, HParams& hp) override {
    emb_ = bind_embeddings(b, hp);
    AttentionBinding ab;
    ab.qkv_bias_required = true;
    ab.sinks_required = true;
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[il];
      L.attn_norm = b.vector(blk(il, "attn_norm.weight"), hp.n_embd);
      L.attn = bind_attention(b, hp, il, ab);
      L.ffn_norm = b.vector(blk(il, "post_attention_norm.weight"), hp.n_embd);
      L.moe.router = b.linear(blk(il, "ffn_gate_inp"), hp.n_embd, hp.n_expert);
      L.moe.gate = b.experts(blk(il, "ffn_gate_exps"), hp.n_embd, hp.n_ff_expert, hp.n_expert);
      L.moe.up = b.experts(blk(il, "ffn_up_exps"), hp.n_embd, hp.n_ff_expert, hp.n_expert);
      L.moe.down = b.experts(blk(il, "ffn_down_exps"), hp.n_ff_expert, hp.n_embd, hp.n_expert);
      L.moe.n_used = hp.n_expert_used;
    }
  }

  void forward(ForwardPass& fp) const override {
    Residual res(fp);
    embed(fp, emb_.token_embd, res.x());
    for (int32_t il = 0; il < static_cast<int32_t>(layers_.size()); ++il) {
      const Layer& L = layers_[il];
      res.add(L.attn_norm, nullptr,
              [&](const float* h, float* y) { self_attention(fp, il, L.attn, h, y); });
      res.add(L.ffn_norm, nullptr,
              [&](const float* h, float* y) { moe_ffn(fp, L.moe, MoeActivation{}, h, y); });
    }
    output_logits(fp, res.x(), emb_.output_norm, emb_.output, 0.0f);
  }

 private:
  EmbeddingWeights emb_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gpt_oss() { return std::make_unique<GptOss>(); }

}  // namespace keel::model
