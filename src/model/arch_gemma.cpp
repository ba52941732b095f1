// The gemma family: gemma2 and gemma3.
//  - embeddings × √n_embd; tied head; GELU(tanh)-gated FFN;
//  - sandwich norms: x += post_attention_norm(attn(attn_norm(x))),
//                    x += post_ffw_norm(ffn(ffn_norm(x)));
//  - gemma2: sliding window on even layers, attention and final logit soft-capping;
//  - gemma3: 5 local : 1 global (or the converter's pattern), q/k RMS norm, local layers
//    use rope base 10000 unscaled, global ones rope.freq_base with rope.scaling.
// GGUF norm weights already include gemma's +1: they are plain multipliers.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"
#include "kernels/activation.h"
#include "kernels/norm.h"
#include "model/architecture.h"
#include "model/blocks.h"
#include "model/common_weights.h"

namespace keel::model {

namespace {

constexpr float kGemmaLocalRopeBase = 10000.0f;
constexpr int64_t kGemma3DefaultPattern = 6;  // every 6th layer is global

struct Layer {
  const float* attn_norm = nullptr;
  AttentionWeights attn;
  const float* post_attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  GatedFfnWeights ffn;
  const float* post_ffn_norm = nullptr;
};

// Which layers slide: gemma3's converter may write attention.sliding_window_pattern, either
// a period n (layer il is global when (il + 1) % n == 0) or one bool per layer.
std::vector<bool> gemma3_sliding_layers(const gguf::GgufFile& f, const HParams& hp) {
  std::vector<bool> sliding(static_cast<size_t>(hp.n_layer));
  const gguf::Value* v = f.find(hp.key("attention.sliding_window_pattern"));
  if (v && v->is_array()) {
    std::vector<int64_t> flags;
    if (v->array_type == gguf::ValueType::kBool) {
      for (bool b : v->as_array<bool>()) flags.push_back(b ? 1 : 0);
    } else {
      flags = v->as_int_array();
    }
    if (static_cast<int64_t>(flags.size()) != hp.n_layer) {
      throw Error(ErrorCode::kInvalidFile,
                  f.path() + ": metadata '" + hp.key("attention.sliding_window_pattern") +
                      "' has " + std::to_string(flags.size()) + " entries for " +
                      std::to_string(hp.n_layer) + " layers");
    }
    for (int64_t il = 0; il < hp.n_layer; ++il) sliding[il] = flags[il] != 0;
    return sliding;
  }
  const int64_t period = v ? v->as_int() : kGemma3DefaultPattern;
  if (period <= 0) {
    throw Error(ErrorCode::kInvalidFile, f.path() + ": metadata '" +
                                             hp.key("attention.sliding_window_pattern") +
                                             "' must be positive");
  }
  for (int64_t il = 0; il < hp.n_layer; ++il) sliding[il] = (il + 1) % period != 0;
  return sliding;
}

class Gemma : public Architecture {
 public:
  explicit Gemma(bool gemma3) : gemma3_(gemma3) {}

  void plan(const gguf::GgufFile& f, HParams& hp) const override {
    if (hp.sliding_window <= 0) {
      throw Error(ErrorCode::kInvalidFile, f.path() + ": metadata '" +
                                               hp.key("attention.sliding_window") +
                                               "' missing or zero");
    }
    std::vector<bool> sliding(static_cast<size_t>(hp.n_layer));
    if (gemma3_) {
      sliding = gemma3_sliding_layers(f, hp);
    } else {
      for (int64_t il = 0; il < hp.n_layer; ++il) sliding[il] = il % 2 == 0;
    }
    hp.layers.assign(static_cast<size_t>(hp.n_layer), LayerPlan{});
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      LayerPlan& l = hp.layers[il];
      l.window = sliding[il] ? hp.sliding_window : 0;
      const bool local_rope = gemma3_ && sliding[il];
      l.rope = rope_from_hparams(hp, kernels::RopeMode::kNeox,
                                 local_rope ? kGemmaLocalRopeBase : hp.rope_base, !local_rope);
      l.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
      l.attn_softcap = gemma3_ ? 0.0f : hp.attn_softcap;
    }
  }

  void bind(WeightBinder& b, HParams& hp) override {
    emb_ = bind_embeddings(b, hp);
    final_softcap_ = gemma3_ ? 0.0f : hp.final_softcap;
    AttentionBinding ab;
    ab.qk_norm_required = gemma3_;
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[il];
      L.attn_norm = b.vector(blk(il, "attn_norm.weight"), hp.n_embd);
      L.attn = bind_attention(b, hp, il, ab);
      L.post_attn_norm = b.vector(blk(il, "post_attention_norm.weight"), hp.n_embd);
      L.ffn_norm = b.vector(blk(il, "ffn_norm.weight"), hp.n_embd);
      L.ffn = bind_gated_ffn(b, hp, il);
      L.post_ffn_norm = b.vector(blk(il, "post_ffw_norm.weight"), hp.n_embd);
    }
  }

  void forward(ForwardPass& fp) const override {
    const int64_t n_embd = fp.hp().n_embd;
    Residual res(fp);
    embed(fp, emb_.token_embd, res.x());
    kernels::scale_inplace(res.x(), std::sqrt(static_cast<float>(n_embd)), fp.n_rows() * n_embd);
    for (int32_t il = 0; il < static_cast<int32_t>(layers_.size()); ++il) {
      const Layer& L = layers_[il];
      res.add(L.attn_norm, L.post_attn_norm,
              [&](const float* h, float* y) { self_attention(fp, il, L.attn, h, y); });
      res.add(L.ffn_norm, L.post_ffn_norm, [&](const float* h, float* y) {
        gated_ffn(fp, L.ffn, Activation::kGeluTanh, h, y);
      });
    }
    output_logits(fp, res.x(), emb_.output_norm, emb_.output, final_softcap_);
  }

 private:
  bool gemma3_;
  float final_softcap_ = 0.0f;
  EmbeddingWeights emb_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gemma2() { return std::make_unique<Gemma>(false); }
std::unique_ptr<Architecture> make_gemma3() { return std::make_unique<Gemma>(true); }

}  // namespace keel::model
