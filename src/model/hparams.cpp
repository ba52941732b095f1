#include "model/hparams.h"

#include <cmath>

#include "core/error.h"
#include "gguf/gguf.h"

namespace keel::model {

namespace {

[[noreturn]] void bad(const gguf::GgufFile& f, const std::string& key, const std::string& why) {
  throw Error(ErrorCode::kInvalidFile, f.path() + ": metadata '" + key + "': " + why);
}

// Some converters store per-layer arrays (e.g. feed_forward_length); keel needs one value.
int64_t uniform_int(const gguf::GgufFile& f, const std::string& key, int64_t dflt) {
  const gguf::Value* v = f.find(key);
  if (!v) return dflt;
  if (!v->is_array()) return v->as_int();
  auto values = v->as_int_array();
  if (values.empty()) bad(f, key, "empty array");
  for (int64_t x : values) {
    if (x != values[0]) bad(f, key, "per-layer values that differ are not supported");
  }
  return values[0];
}

int64_t positive(const gguf::GgufFile& f, const std::string& key, int64_t v) {
  if (v <= 0) bad(f, key, "must be positive, got " + std::to_string(v));
  return v;
}

}  // namespace

HParams read_hparams(const gguf::GgufFile& f) {
  HParams hp;
  hp.arch = f.get_string("general.architecture");
  hp.n_ctx_train = f.get_int_or(hp.key("context_length"), 0);
  hp.n_embd = positive(f, hp.key("embedding_length"), f.get_int(hp.key("embedding_length")));
  hp.n_layer = positive(f, hp.key("block_count"), f.get_int(hp.key("block_count")));
  hp.n_head = positive(f, hp.key("attention.head_count"),
                       uniform_int(f, hp.key("attention.head_count"), 0));
  hp.n_head_kv = positive(f, hp.key("attention.head_count_kv"),
                          uniform_int(f, hp.key("attention.head_count_kv"), hp.n_head));
  if (hp.n_head % hp.n_head_kv != 0) {
    bad(f, hp.key("attention.head_count_kv"),
        std::to_string(hp.n_head_kv) + " does not divide head_count " + std::to_string(hp.n_head));
  }
  hp.head_dim_k = positive(f, hp.key("attention.key_length"),
                           f.get_int_or(hp.key("attention.key_length"), hp.n_embd / hp.n_head));
  hp.head_dim_v = positive(f, hp.key("attention.value_length"),
                           f.get_int_or(hp.key("attention.value_length"), hp.n_embd / hp.n_head));
  hp.n_ff = uniform_int(f, hp.key("feed_forward_length"), 0);
  hp.norm_eps = static_cast<float>(
      f.get_float_or(hp.key("attention.layer_norm_rms_epsilon"), 1e-5));
  if (!(hp.norm_eps >= 0.0f)) bad(f, hp.key("attention.layer_norm_rms_epsilon"), "negative");

  hp.n_rot = f.get_int_or(hp.key("rope.dimension_count"), hp.head_dim_k);
  if (hp.n_rot <= 0 || hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim_k) {
    bad(f, hp.key("rope.dimension_count"),
        std::to_string(hp.n_rot) + " must be even and in (0, head_dim " +
            std::to_string(hp.head_dim_k) + "]");
  }
  hp.rope_base = static_cast<float>(f.get_float_or(hp.key("rope.freq_base"), 10000.0));
  if (!(hp.rope_base > 0.0f)) bad(f, hp.key("rope.freq_base"), "must be positive");
  hp.rope_scaling = f.get_string_or(hp.key("rope.scaling.type"), "");
  hp.rope_scaling_factor = static_cast<float>(f.get_float_or(hp.key("rope.scaling.factor"), 0.0));
  if (hp.rope_scaling_factor == 0.0f) {
    // Older converters wrote only the linear scale.
    const double lin = f.get_float_or(hp.key("rope.scale_linear"), 0.0);
    if (lin != 0.0) {
      hp.rope_scaling_factor = static_cast<float>(lin);
      if (hp.rope_scaling.empty()) hp.rope_scaling = "linear";
    }
  }
  if (hp.rope_scaling_factor == 0.0f) hp.rope_scaling_factor = 1.0f;
  if (!(hp.rope_scaling_factor > 0.0f)) bad(f, hp.key("rope.scaling.factor"), "must be positive");
  hp.rope_n_ctx_orig = f.get_int_or(hp.key("rope.scaling.original_context_length"), hp.n_ctx_train);
  if (hp.rope_scaling != "" && hp.rope_scaling != "none" && hp.rope_scaling != "linear" &&
      hp.rope_scaling != "yarn") {
    throw Error(ErrorCode::kUnsupported,
                f.path() + ": rope scaling type '" + hp.rope_scaling + "' is not supported");
  }
  if (hp.rope_scaling == "yarn" && hp.rope_n_ctx_orig <= 0) {
    bad(f, hp.key("rope.scaling.original_context_length"), "YaRN needs a positive value");
  }

  const int64_t window = f.get_int_or(hp.key("attention.sliding_window"), 0);
  if (window < 0 || window > INT32_MAX) bad(f, hp.key("attention.sliding_window"), "out of range");
  hp.sliding_window = static_cast<int32_t>(window);
  hp.attn_softcap = static_cast<float>(f.get_float_or(hp.key("attn_logit_softcapping"), 0.0));
  hp.final_softcap = static_cast<float>(f.get_float_or(hp.key("final_logit_softcapping"), 0.0));

  hp.n_expert = f.get_int_or(hp.key("expert_count"), 0);
  hp.n_expert_used = f.get_int_or(hp.key("expert_used_count"), 0);
  hp.n_ff_expert = f.get_int_or(hp.key("expert_feed_forward_length"), 0);
  if (hp.n_expert < 0 || hp.n_expert_used < 0 || hp.n_expert_used > hp.n_expert) {
    bad(f, hp.key("expert_used_count"), "must be in [0, expert_count]");
  }
  return hp;
}

kernels::RopeParams rope_from_hparams(const HParams& hp, kernels::RopeMode mode, float base,
                                      bool apply_scaling) {
  kernels::RopeParams r;
  r.mode = mode;
  r.n_rot = hp.n_rot;
  r.base = base;
  if (apply_scaling && (hp.rope_scaling == "linear" || hp.rope_scaling == "yarn")) {
    r.freq_scale = 1.0f / hp.rope_scaling_factor;
  }
  if (apply_scaling && hp.rope_scaling == "yarn") {
    r.ext_factor = 1.0f;
    r.n_ctx_orig = hp.rope_n_ctx_orig;
  }
  return r;
}

}  // namespace keel::model
