// Hyper-parameters of a model, read from GGUF metadata (architecture-prefixed keys, with
// the defaults converters rely on), plus the per-layer plan each architecture fills in
// (sliding window, RoPE, attention scale and soft-capping per layer).
//
// Contract: read_hparams() validates what it reads (positive sizes, heads divisible,
// rotary dims even and within the head) and throws keel::Error(kInvalidFile) naming the
// file and key. HParams is a plain value; freq_factors pointers in the plan point into the
// model's mapped weights and live as long as the Model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/rope.h"

namespace keel::gguf {
class GgufFile;
}

namespace keel::model {

struct LayerPlan {
  int32_t window = 0;  // 0 = full attention; else keys p − window < k <= p
  kernels::RopeParams rope;
  float attn_scale = 1.0f;    // multiplies q·k
  float attn_softcap = 0.0f;  // 0 = off
};

struct HParams {
  std::string arch;
  int64_t n_vocab = 0;  // from token_embd.weight at bind time
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim_k = 0;  // key_length, default n_embd / n_head
  int64_t head_dim_v = 0;  // value_length, default n_embd / n_head
  int64_t n_ff = 0;
  float norm_eps = 1e-5f;

  // RoPE as stored; architectures turn it into LayerPlan::rope.
  int64_t n_rot = 0;  // rope.dimension_count, default head_dim_k
  float rope_base = 10000.0f;
  std::string rope_scaling;  // "", "none", "linear", "yarn"
  float rope_scaling_factor = 1.0f;
  int64_t rope_n_ctx_orig = 0;

  int32_t sliding_window = 0;
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;

  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_expert = 0;

  std::vector<LayerPlan> layers;  // n_layer entries, filled by the architecture

  // "<arch>.<suffix>"
  std::string key(const std::string& suffix) const { return arch + "." + suffix; }
};

// Reads the keys every architecture shares. Does not fill `layers` or n_vocab.
HParams read_hparams(const gguf::GgufFile& file);

// The RoPE of a layer from the stored scaling (linear → freq_scale = 1/factor;
// yarn → ext_factor 1 and n_ctx_orig), with base `base` and the given mode.
kernels::RopeParams rope_from_hparams(const HParams& hp, kernels::RopeMode mode, float base,
                                      bool apply_scaling);

}  // namespace keel::model
