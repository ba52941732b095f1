// What `keel inspect` shows about a GGUF file, gathered once and rendered as text or JSON
// (inspect.cpp). Pure: reads the GgufFile, allocates nothing in proportion to tensor data.
//
// Contract: build_inspect_report() never throws for a file GgufFile accepted; metadata of
// unexpected types is shown as stored and the memory section then says why it is missing.
// Value pointers in the report point into the GgufFile and live as long as it does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"
#include "tensor/types.h"

namespace keel::cli {

struct MemoryOptions {
  int64_t n_ctx = 4096;
  int32_t n_parallel = 1;
  tensor::DType k_type = tensor::DType::kF16;
  tensor::DType v_type = tensor::DType::kF16;
};

struct SpecialToken {
  std::string role;               // "bos", "eos", "unk", "pad", ...
  std::optional<int64_t> id;      // unset when absent or 0xFFFFFFFF
  std::optional<std::string> text;  // the token's text when the id is inside the vocabulary
};

struct MemoryEstimate {
  std::string error;          // non-empty when no estimate could be made: why
  std::string layout_source;  // where the KV layout came from
  int64_t n_layers = 0, n_sliding_layers = 0, n_kv_heads = 0, head_dim_k = 0, head_dim_v = 0;
  uint64_t kv_bytes_per_token = 0;  // every layer, one position
  uint64_t kv_bytes = 0;            // the pools for n_ctx * n_parallel tokens
  uint64_t total_bytes = 0;         // weights + KV
};

struct InspectReport {
  std::string architecture;  // general.architecture, or "" when absent
  using Entry = std::pair<std::string, const gguf::Value*>;
  std::vector<Entry> hparams;  // "<arch>.*" keys, prefix stripped, in file order
  std::string tokenizer_model, tokenizer_pre;
  int64_t vocab_size = 0;
  std::vector<SpecialToken> special_tokens;
  std::vector<Entry> other;  // every key not shown above, in file order
  uint64_t weight_bytes = 0;
  MemoryOptions memory_options;
  MemoryEstimate memory;
};

InspectReport build_inspect_report(const gguf::GgufFile& file, const MemoryOptions& options);

}  // namespace keel::cli
