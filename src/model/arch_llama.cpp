// The llama family: llama (Llama 2/3, Mistral, TinyLlama, stories260K), qwen2 (q/k/v
// biases, NEOX rope) and qwen3 (per-head q/k RMS norm, head_dim from key_length).
// Pre-norm blocks: x += attn(norm(x)); x += ffn(norm(x)); SiLU-gated FFN.
#include <cmath>
#include <vector>

#include "gguf/gguf.h"
#include "model/architecture.h"
#include "model/blocks.h"
#include "model/common_weights.h"

namespace keel::model {

namespace {

struct Variant {
  kernels::RopeMode rope_mode;
  AttentionBinding attention;
};

struct Layer {
  const float* attn_norm = nullptr;
  AttentionWeights attn;
  const float* ffn_norm = nullptr;
  GatedFfnWeights ffn;
};

class LlamaFamily : public Architecture {
 public:
  explicit LlamaFamily(Variant v) : variant_(v) {}

  void plan(const gguf::GgufFile&, HParams& hp) const override {
    hp.layers.assign(static_cast<size_t>(hp.n_layer), LayerPlan{});
    for (LayerPlan& l : hp.layers) {
      l.rope = rope_from_hparams(hp, variant_.rope_mode, hp.rope_base, true);
      l.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
    }
  }

  void bind(WeightBinder& b, HParams& hp) override {
    emb_ = bind_embeddings(b, hp);
    // Llama 3 style per-frequency divisors, shared by all layers.
    const float* freqs = b.optional_vector("rope_freqs.weight", hp.n_rot / 2);
    for (LayerPlan& l : hp.layers) l.rope.freq_factors = freqs;
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[il];
      L.attn_norm = b.vector(blk(il, "attn_norm.weight"), hp.n_embd);
      L.attn = bind_attention(b, hp, il, variant_.attention);
      L.ffn_norm = b.vector(blk(il, "ffn_norm.weight"), hp.n_embd);
      L.ffn = bind_gated_ffn(b, hp, il);
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
              [&](const float* h, float* y) { gated_ffn(fp, L.ffn, Activation::kSilu, h, y); });
    }
    output_logits(fp, res.x(), emb_.output_norm, emb_.output, 0.0f);
  }

 private:
  Variant variant_;
  EmbeddingWeights emb_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_llama() {
  return std::make_unique<LlamaFamily>(Variant{kernels::RopeMode::kNormal, {}});
}

std::unique_ptr<Architecture> make_qwen2() {
  AttentionBinding a;
  a.qkv_bias_required = true;
  return std::make_unique<LlamaFamily>(Variant{kernels::RopeMode::kNeox, a});
}

std::unique_ptr<Architecture> make_qwen3() {
  AttentionBinding a;
  a.qk_norm_required = true;
  return std::make_unique<LlamaFamily>(Variant{kernels::RopeMode::kNeox, a});
}

}  // namespace keel::model
