// Helpers for running reference models through keel in the modes golden tests compare.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace keel::test {

std::vector<int32_t> read_token_ids(const std::string& path);
std::vector<float> read_f32(const std::string& path);

struct RunOptions {
  bool flash = false;
  int64_t chunk = 0;  // tokens per forward call; 0 = all in one batch
  tensor::DType kv_type = tensor::DType::kF32;
  int32_t page_tokens = 16;
};

// Feeds `tokens` to a fresh cache (one sequence) and returns every position's logits
// [n_tokens][n_vocab].
std::vector<float> run_logits(const model::Model& m, const std::vector<int32_t>& tokens,
                              ThreadPool& pool, const RunOptions& opts);

kv::KvOptions kv_options(tensor::DType type, int32_t page_tokens, int64_t max_tokens);

struct Diff {
  double max_abs = 0, mean_abs = 0;
  double argmax_agree = 0;  // fraction of rows with equal argmax
  int64_t argmax_disagree_clear = 0;  // rows whose argmax differs though the reference's
                                      // top-2 gap exceeds the allowed error (not a near tie)
};
Diff compare(const std::vector<float>& got, const std::vector<float>& ref, int64_t n_vocab,
             double tie_margin);

// A tensor being copied by copy_gguf(); edits may change any field.
struct TensorCopy {
  std::string name;
  tensor::DType type;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};
// Copies a GGUF file to temp_dir()/<name>.gguf: `edit` may change a tensor or return false
// to drop it; `meta` may change metadata. Returns the new path.
std::string copy_gguf(const std::string& src, const std::string& name,
                      const std::function<bool(TensorCopy&)>& edit,
                      const std::function<void(gguf::GgufWriter&)>& meta = {});

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace keel::test
