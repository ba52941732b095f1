// Memory plan — weights + KV pool + workspace for a configuration, checked against a
// limit before anything is allocated, so a configuration that does not fit is refused at
// start with the numbers and the options that would fit (q8_0 KV, a smaller context,
// fewer slots) instead of dying mid-request (DESIGN.md §Rules, incident 000's table).
//
// Contract:
//  - plan_memory() is pure given its inputs: the model-specific sizes come in as
//    functions (the KV pool from kv::KvCache::plan, the workspace from the model's
//    shapes), so alternatives are evaluated with the same accounting as the real thing.
//  - require_fits() throws keel::Error(kOutOfMemory) whose message names every figure and
//    the alternatives.
//  - to_text() / to_json() print the plan for `keel serve --dry-run` / `keel inspect --plan`.
//  - Thread-safe (no shared state); available_memory_bytes() reads /proc/meminfo.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/types.h"

namespace keel::engine {

struct MemoryConfig {
  int32_t n_ctx = 4096;
  int32_t n_parallel = 1;
  int32_t batch_tokens = 512;
  tensor::DType k_type = tensor::DType::kF16;
  tensor::DType v_type = tensor::DType::kF16;
};

struct MemoryPlanInputs {
  std::string model;           // for messages (file name)
  uint64_t weights_bytes = 0;  // mapped tensor data
  std::function<uint64_t(const MemoryConfig&)> kv_bytes;         // the KV page pools
  std::function<uint64_t(const MemoryConfig&)> workspace_bytes;  // activations, logits
  MemoryConfig config;
  uint64_t limit_bytes = 0;    // 0: use available memory
  std::string limit_source;    // e.g. "--mem-limit 8G"; filled in when limit_bytes is 0
};

struct MemoryPlan {
  std::string model;
  MemoryConfig config;
  uint64_t weights_bytes = 0, kv_bytes = 0, workspace_bytes = 0, total_bytes = 0;
  uint64_t limit_bytes = 0;
  std::string limit_source;
  bool fits = false;

  struct Alternative {
    std::string flags;  // what to pass, e.g. "-ctk q8_0 -ctv q8_0" or "--ctx 8192"
    MemoryConfig config;
    uint64_t total_bytes = 0;
  };
  std::vector<Alternative> alternatives;  // only when it does not fit

  std::string to_text() const;
  std::string to_json() const;
};

MemoryPlan plan_memory(const MemoryPlanInputs& inputs);
void require_fits(const MemoryPlan& plan);

// "MemAvailable" of /proc/meminfo text, in bytes. Throws kInvalidArgument when absent.
uint64_t parse_meminfo_available(std::string_view meminfo);
// Available memory of this machine. Throws kIo when /proc/meminfo cannot be read.
uint64_t available_memory_bytes();
// "8G", "512M", "1.5GiB", "1000000" (bytes); K/M/G/T are powers of 1024. Throws
// kInvalidArgument naming the text.
uint64_t parse_byte_size(std::string_view text);
std::string format_bytes(uint64_t bytes);  // "1.50 GiB", "512.0 MiB", "100 B"

}  // namespace keel::engine
