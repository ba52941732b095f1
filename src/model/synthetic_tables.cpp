// The synthetic generator's tables: one row per architecture (its tensors, by the names
// and shapes keel's loader binds, and its metadata traits), shape presets, weight types.
// Tensor lists are spelled from shared groups so a family's variants differ visibly.
#include "model/synthetic_tables.h"

#include "core/error.h"

namespace keel::model::synthetic {
namespace {

using tensor::DType;
using Specs = std::vector<TensorSpec>;

Specs operator+(Specs a, const Specs& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- Tensor groups ------------------------------------------------------------------

const Specs kEmbedding = {{"token_embd.weight", {Dim::kEmbd, Dim::kVocab}, Role::kEmbedding}};
// A tied head reads logits off the embedding, so it gets the output matrix's scale and type.
const Specs kTiedEmbedding = {{"token_embd.weight", {Dim::kEmbd, Dim::kVocab}, Role::kOutput}};
const Specs kOutputNorm = {{"output_norm.weight", {Dim::kEmbd}, Role::kNorm}};
const Specs kOutput = {{"output.weight", {Dim::kEmbd, Dim::kVocab}, Role::kOutput}};

const Specs kAttnNorm = {{"attn_norm.weight", {Dim::kEmbd}, Role::kNorm}};
const Specs kAttention = {
    {"attn_q.weight", {Dim::kEmbd, Dim::kQ}, Role::kAttnQ},
    {"attn_k.weight", {Dim::kEmbd, Dim::kKV}, Role::kAttnK},
    {"attn_v.weight", {Dim::kEmbd, Dim::kKV}, Role::kAttnV},
    {"attn_output.weight", {Dim::kQ, Dim::kEmbd}, Role::kAttnOut}};
const Specs kQkvBias = {{"attn_q.bias", {Dim::kQ}, Role::kBias},
                        {"attn_k.bias", {Dim::kKV}, Role::kBias},
                        {"attn_v.bias", {Dim::kKV}, Role::kBias}};
const Specs kOutBias = {{"attn_output.bias", {Dim::kEmbd}, Role::kBias}};
const Specs kQkNorm = {{"attn_q_norm.weight", {Dim::kHeadDim}, Role::kNorm},
                       {"attn_k_norm.weight", {Dim::kHeadDim}, Role::kNorm}};
const Specs kSinks = {{"attn_sinks.weight", {Dim::kHead}, Role::kSinks}};
const Specs kPostAttnNorm = {{"post_attention_norm.weight", {Dim::kEmbd}, Role::kNorm}};

const Specs kFfnNorm = {{"ffn_norm.weight", {Dim::kEmbd}, Role::kNorm}};
const Specs kGatedFfn = {{"ffn_gate.weight", {Dim::kEmbd, Dim::kFF}, Role::kFfnGate},
                         {"ffn_up.weight", {Dim::kEmbd, Dim::kFF}, Role::kFfnUp},
                         {"ffn_down.weight", {Dim::kFF, Dim::kEmbd}, Role::kFfnDown}};
const Specs kPostFfnNorm = {{"post_ffw_norm.weight", {Dim::kEmbd}, Role::kNorm}};
// Router with bias and experts with biases, as gpt-oss stores them.
const Specs kExperts = {
    {"ffn_gate_inp.weight", {Dim::kEmbd, Dim::kExpert}, Role::kRouter},
    {"ffn_gate_inp.bias", {Dim::kExpert}, Role::kBias},
    {"ffn_gate_exps.weight", {Dim::kEmbd, Dim::kFF, Dim::kExpert}, Role::kFfnGate},
    {"ffn_gate_exps.bias", {Dim::kFF, Dim::kExpert}, Role::kBias},
    {"ffn_up_exps.weight", {Dim::kEmbd, Dim::kFF, Dim::kExpert}, Role::kFfnUp},
    {"ffn_up_exps.bias", {Dim::kFF, Dim::kExpert}, Role::kBias},
    {"ffn_down_exps.weight", {Dim::kFF, Dim::kEmbd, Dim::kExpert}, Role::kFfnDown},
    {"ffn_down_exps.bias", {Dim::kEmbd, Dim::kExpert}, Role::kBias}};

const Specs kLlamaLayer = kAttnNorm + kAttention + kFfnNorm + kGatedFfn;

Specs gemma_layer(bool qk_norm) {
  return kAttnNorm + kAttention + (qk_norm ? kQkNorm : Specs{}) + kPostAttnNorm + kFfnNorm +
         kGatedFfn + kPostFfnNorm;
}

// llama.cpp's rule for spending more bits: the first and last eighth of the layers and
// every third one in between.
bool use_more_bits(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// A type whose blocks fit a row of n elements: llama.cpp's fallbacks for narrow rows.
DType fit_to_row(DType type, int64_t n) {
  if (n % tensor::traits(type).block_size == 0) return type;
  if (type == DType::kQ4_K) return fit_to_row(DType::kQ5_0, n);
  if (type == DType::kQ6_K) return fit_to_row(DType::kQ8_0, n);
  return DType::kF16;
}

}  // namespace

bool ArchSpec::has_experts() const {
  for (const TensorSpec& t : layer) {
    for (Dim d : t.dims) {
      if (d == Dim::kExpert) return true;
    }
  }
  return false;
}

const std::vector<ArchSpec>& arch_table() {
  // name, head, layer, tail, head dims, rope base, eps, sliding, global every,
  // attn/final soft-cap, rope scaling, factor, original context
  static const std::vector<ArchSpec> table = {
      {"llama", kEmbedding, kLlamaLayer, kOutputNorm + kOutput, false, 10000.0f, 1e-5f,
       Sliding::kNone, 0, 0.0f, 0.0f, "", 1.0f, 0},
      {"qwen2", kTiedEmbedding, kAttnNorm + kAttention + kQkvBias + kFfnNorm + kGatedFfn,
       kOutputNorm, false, 1e6f, 1e-6f, Sliding::kNone, 0, 0.0f, 0.0f, "", 1.0f, 0},
      {"qwen3", kEmbedding, kAttnNorm + kAttention + kQkNorm + kFfnNorm + kGatedFfn,
       kOutputNorm + kOutput, true, 1e6f, 1e-6f, Sliding::kNone, 0, 0.0f, 0.0f, "", 1.0f, 0},
      {"gemma2", kTiedEmbedding, gemma_layer(false), kOutputNorm, true, 10000.0f, 1e-6f,
       Sliding::kEvenLayers, 0, 50.0f, 30.0f, "", 1.0f, 0},
      {"gemma3", kTiedEmbedding, gemma_layer(true), kOutputNorm, true, 1e6f, 1e-6f,
       Sliding::kPatternKey, 6, 0.0f, 0.0f, "linear", 8.0f, 0},
      {"gpt-oss", kEmbedding,
       kAttnNorm + kAttention + kQkvBias + kOutBias + kSinks + kPostAttnNorm + kExperts,
       kOutputNorm + kOutput, true, 150000.0f, 1e-5f, Sliding::kEvenLayers, 0, 0.0f, 0.0f,
       "yarn", 32.0f, 4096},
  };
  return table;
}

// Widths are multiples of 256 so every quantization mix applies without fallbacks.
// head_dim 0 = n_embd / n_head; n_rot 0 = head_dim (both after overrides).
const std::vector<Preset>& preset_table() {
  static const std::vector<Preset> table = {
      // ~1.3M parameters (5 MB as f32) with the built-in vocabulary.
      {"llama", "tiny", {.n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .n_ff = 512, .n_ctx = 512}},
      // ~20M parameters in the layers: fast enough for an interactive demo server.
      {"llama", "demo", {.n_layer = 6, .n_embd = 512, .n_head = 8, .n_head_kv = 4, .n_ff = 1536, .n_ctx = 2048}},
      // TinyLlama-1.1B's shapes.
      {"llama", "1b",
       {.n_layer = 22, .n_embd = 2048, .n_head = 32, .n_head_kv = 4, .n_ff = 5632, .n_vocab = 32000, .n_ctx = 2048}},
      {"qwen2", "tiny", {.n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .n_ff = 512, .n_ctx = 512}},
      {"qwen2", "demo", {.n_layer = 6, .n_embd = 512, .n_head = 8, .n_head_kv = 4, .n_ff = 1536, .n_ctx = 2048}},
      // Qwen3's heads are wider than n_embd / n_head.
      {"qwen3", "tiny",
       {.n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 128, .n_ff = 512, .n_ctx = 512}},
      {"qwen3", "demo",
       {.n_layer = 6, .n_embd = 512, .n_head = 8, .n_head_kv = 4, .head_dim = 128, .n_ff = 1536, .n_ctx = 2048}},
      // Windows small enough that a few dozen tokens leave them.
      {"gemma2", "tiny",
       {.n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .n_ff = 512, .n_ctx = 512, .sliding_window = 16}},
      {"gemma2", "demo",
       {.n_layer = 6, .n_embd = 512, .n_head = 8, .n_head_kv = 4, .n_ff = 1536, .n_ctx = 2048, .sliding_window = 512}},
      // Six layers: one whole 5 local : 1 global period.
      {"gemma3", "tiny",
       {.n_layer = 6, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .n_ff = 512, .n_ctx = 512, .sliding_window = 16}},
      {"gemma3", "demo",
       {.n_layer = 6, .n_embd = 512, .n_head = 8, .n_head_kv = 4, .n_ff = 1536, .n_ctx = 2048, .sliding_window = 512}},
      {"gpt-oss", "tiny",
       {.n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .n_ff = 256, .n_ctx = 512, .sliding_window = 16,
        .n_expert = 4, .n_expert_used = 2}},
      {"gpt-oss", "demo",
       {.n_layer = 6, .n_embd = 512, .n_head = 8, .n_head_kv = 4, .n_ff = 512, .n_ctx = 2048, .sliding_window = 128,
        .n_expert = 4, .n_expert_used = 2}},
  };
  return table;
}

const std::vector<WeightType>& weight_types() {
  // mxfp4 is llama.cpp's MXFP4_MOE mix: experts in MXFP4, other matrices in Q8_0.
  static const std::vector<WeightType> table = {
      {"f32", DType::kF32, DType::kF32, 0},      {"f16", DType::kF16, DType::kF16, 1},
      {"q8_0", DType::kQ8_0, DType::kQ8_0, 7},   {"q4_0", DType::kQ4_0, DType::kQ4_0, 2},
      {"q4_k_m", DType::kQ4_K, DType::kQ4_K, 15}, {"mxfp4", DType::kQ8_0, DType::kMXFP4, 38},
      {"bf16", DType::kBF16, DType::kBF16, 32},
  };
  return table;
}

const ArchSpec& find_arch(const std::string& name) {
  for (const ArchSpec& a : arch_table()) {
    if (name == a.name) return a;
  }
  throw Error(ErrorCode::kUnsupported, "make-model: unknown architecture '" + name + "'");
}

const Preset& find_preset(const std::string& arch, const std::string& name) {
  for (const Preset& p : preset_table()) {
    if (arch == p.arch && name == p.name) return p;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "make-model: no preset '" + name + "' for architecture '" + arch + "'");
}

const WeightType& find_weight_type(const std::string& name) {
  for (const WeightType& w : weight_types()) {
    if (name == w.name) return w;
  }
  throw Error(ErrorCode::kInvalidArgument, "make-model: unknown weight type '" + name + "'");
}

DType tensor_type(const WeightType& w, Role role, bool expert, int64_t layer, int64_t n_layer,
                  int64_t ne0) {
  switch (role) {
    case Role::kNorm:
    case Role::kBias:
    case Role::kSinks:
    case Role::kRouter: return DType::kF32;
    default: break;
  }
  const DType base = expert ? w.experts : w.base;
  if (base == DType::kF32) return DType::kF32;
  DType t = base;
  if (base == DType::kQ4_K) {  // the Q4_K_M mix
    if (role == Role::kOutput) t = DType::kQ6_K;
    if ((role == Role::kAttnV || role == Role::kFfnDown) && use_more_bits(layer, n_layer)) t = DType::kQ6_K;
  } else if (base == DType::kQ4_0 && role == Role::kOutput) {
    t = DType::kQ6_K;  // llama.cpp keeps the output matrix at 6 bits in Q4_0 files
  }
  return fit_to_row(t, ne0);
}

}  // namespace keel::model::synthetic
