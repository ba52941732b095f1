// Synthetic models: GGUF files with seeded, deterministic random weights at realistic
// shapes, for tests and benchmarks without downloads (`keel make-model`).
//
// Contract:
//  - write_synthetic_model() writes a complete model (metadata with the standard llama.cpp
//    keys, tokenizer section, weights) that keel's loader reads, for every architecture
//    keel runs (llama, qwen2, qwen3, gemma2, gemma3, gpt-oss). The same options (seed
//    included) give byte-identical files whatever the thread count: every row's values
//    come from a counter-based generator keyed by (seed, tensor name, row).
//  - Tensors are generated and quantized one at a time while the file is written, so
//    memory stays at about one tensor (the 1b preset's largest is its embedding).
//  - Architectures and presets are tables (synthetic_tables.cpp): an architecture is a
//    tensor list plus a row of metadata traits, not a new generator.
//  - Overrides change a preset's shape; synthetic_shape() applies and validates them.
//  - Errors (unknown arch/preset/type, an override out of range or meaningless for the
//    architecture, unreadable vocab file, I/O) throw keel::Error naming the option or
//    file. Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace keel::model {

// A model's shape: a preset's row, the overrides applied to it (0 = keep the preset's
// value), or the result of synthetic_shape(): what the file's metadata will say.
struct SyntheticShape {
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;        // attention.key_length/value_length
  int64_t n_ff = 0;            // the dense FFN's width, or each expert's
  int64_t n_vocab = 0;         // 0 = the vocabulary's own size; else the built-in one is
                               // padded to it (not with vocab_path)
  int64_t n_ctx = 0;           // context_length
  int64_t sliding_window = 0;  // 0 for architectures without sliding-window layers
  int64_t n_rot = 0;           // rope.dimension_count; < head_dim is partial rotary
  int64_t n_expert = 0;        // 0 for dense architectures
  int64_t n_expert_used = 0;
};

struct SyntheticOptions {
  std::string arch = "llama";
  std::string preset = "tiny";       // tiny | demo (every arch) | 1b (llama)
  std::string weight_type = "f32";   // f32 | f16 | q8_0 | q4_0 | q4_k_m | mxfp4 (MoE only)
  std::string vocab_path;            // copy tokenizer.* from this GGUF; empty = built-in
  SyntheticShape overrides;          // fields left 0 keep the preset's value
  uint64_t seed = 0;
  int n_threads = 0;                 // 0 = ThreadPool::default_threads()
};

struct SyntheticSummary {
  std::string name;  // general.name
  int64_t n_vocab = 0;
  int64_t n_tensors = 0;
  int64_t n_params = 0;
  uint64_t weight_bytes = 0;  // tensor data, before alignment padding
};

// Names accepted by SyntheticOptions, for help texts and validation.
std::vector<std::string> synthetic_arches();
std::vector<std::string> synthetic_presets(const std::string& arch);
std::vector<std::string> synthetic_weight_types();

// Resolves and validates arch, preset, weight type and overrides without writing anything.
// Throws keel::Error(kInvalidArgument / kUnsupported) naming the offending option.
SyntheticShape synthetic_shape(const SyntheticOptions& options);

// Writes the model to `path` (atomically). Throws keel::Error.
SyntheticSummary write_synthetic_model(const std::string& path, const SyntheticOptions& options);

}  // namespace keel::model
