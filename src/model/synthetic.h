// Synthetic models: GGUF files with seeded, deterministic random weights at realistic
// shapes, for tests and benchmarks without downloads (`keel make-model`).
//
// Contract:
//  - write_synthetic_model() writes a complete model (metadata with the standard llama.cpp
//    keys, tokenizer section, weights) that keel's loader reads. The same options (seed
//    included) give byte-identical files whatever the thread count: every row's values
//    come from a counter-based generator keyed by (seed, tensor name, row).
//  - Tensors are generated and quantized one at a time while the file is written, so
//    memory stays at about one tensor (the 1b preset's largest is its embedding).
//  - Architectures and presets are tables (synthetic.cpp): adding qwen3 or gemma means
//    adding a tensor list and a preset row, not a new generator.
//  - Errors (unknown arch/preset/type, unreadable vocab file, I/O) throw keel::Error
//    naming the option or file. Thread-safe: no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace keel::model {

struct SyntheticOptions {
  std::string arch = "llama";
  std::string preset = "tiny";       // tiny | demo | 1b
  std::string weight_type = "f32";   // f32 | f16 | q8_0 | q4_0 | q4_k_m
  std::string vocab_path;            // copy tokenizer.* from this GGUF; empty = built-in
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

// Writes the model to `path` (atomically). Throws keel::Error.
SyntheticSummary write_synthetic_model(const std::string& path, const SyntheticOptions& options);

}  // namespace keel::model
