// Internal to the synthetic model generator (synthetic.h): the architecture rows, shape
// presets, weight types and the quantization mix. Data only; the generator in
// synthetic.cpp reads these rows and never switches on an architecture's name.
// Thread-safety: the tables are immutable statics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/synthetic.h"
#include "tensor/types.h"

namespace keel::model::synthetic {

// Symbolic tensor dimensions, resolved against a SyntheticShape.
enum class Dim { kEmbd, kFF, kVocab, kQ, kKV, kHeadDim, kHead, kExpert };

// What a tensor is for: decides its initial values and its type in a quantization mix.
enum class Role {
  kNorm,       // ones (GGUF norm weights are plain multipliers)
  kBias,       // small values, always F32
  kSinks,      // per-head attention sink logits, F32
  kRouter,     // expert router matrix, F32 as llama.cpp keeps it
  kEmbedding,  // input embedding (an untied head has its own output matrix)
  kOutput,     // output matrix, or the embedding of a tied head
  kAttnQ, kAttnK, kAttnV, kAttnOut,
  kFfnGate, kFfnUp, kFfnDown,
};

struct TensorSpec {
  const char* name;       // per-layer names are prefixed with "blk.N."
  std::vector<Dim> dims;  // GGUF order: ne[0] (contiguous) first
  Role role;
};

// Which layers use the sliding window, and how the file says so.
enum class Sliding {
  kNone,
  kEvenLayers,   // fixed by the architecture (gemma2, gpt-oss): layers 0, 2, 4, ...
  kPatternKey,   // attention.sliding_window_pattern, one bool per layer (gemma3)
};

struct ArchSpec {
  const char* name;
  std::vector<TensorSpec> head;   // before the layers
  std::vector<TensorSpec> layer;  // per layer
  std::vector<TensorSpec> tail;   // after the layers
  bool writes_head_dims;          // attention.key_length / value_length
  float rope_base;
  float norm_eps;
  Sliding sliding;
  int64_t global_every;           // kPatternKey: layer il is global when (il + 1) % n == 0
  float attn_softcap;             // 0 = key not written
  float final_softcap;
  const char* rope_scaling;       // "" = none, "linear", "yarn"
  float rope_scaling_factor;
  int64_t rope_orig_ctx;          // yarn's original_context_length

  bool has_experts() const;
};

struct Preset {
  const char* arch;
  const char* name;
  SyntheticShape shape;
};

struct WeightType {
  const char* name;
  tensor::DType base;     // most matrices
  tensor::DType experts;  // expert matrices (3-D)
  uint32_t file_type;     // general.file_type (llama.cpp's LLAMA_FTYPE_*)
};

const std::vector<ArchSpec>& arch_table();
const std::vector<Preset>& preset_table();
const std::vector<WeightType>& weight_types();

const ArchSpec& find_arch(const std::string& name);
const Preset& find_preset(const std::string& arch, const std::string& name);
const WeightType& find_weight_type(const std::string& name);

// The stored type of a tensor in a weight type's mix (llama.cpp's rules, with its
// fallbacks for rows that do not fit a block).
tensor::DType tensor_type(const WeightType& w, Role role, bool expert, int64_t layer,
                          int64_t n_layer, int64_t ne0);

}  // namespace keel::model::synthetic
