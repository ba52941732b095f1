// ModelBackend — the engine's Backend over a real model: model::Model for the forward
// pass, kv::KvCache (paged, with its prefix index) for the sequences, a ThreadPool for
// the kernels, tokenizer::Tokenizer for text. Plus the loader that plans memory before
// anything big is allocated and starts an Engine on it.
//
// Contract:
//  - open_model() maps the model and reads its tokenizer and computes the memory plan;
//    it allocates no KV. start_engine() refuses (keel::Error kOutOfMemory, naming every
//    figure and the options that would fit) when the plan does not fit, else allocates
//    the whole KV pool up front — no allocation during a request can fail for lack of
//    memory — and starts the engine thread. It also reads KEEL_FAULT (core/fault.h): with
//    it set, faults are injected at the fault points (engine step, kernel dispatch).
//  - The KV pool holds n_ctx × n_parallel tokens (every slot full at once); pages of
//    finished requests stay cached in it until live sequences need them (LRU eviction).
//  - Model and tokenizer are shared read-only (the server tokenizes on its threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/memory_plan.h"
#include "model/batch.h"
#include "tensor/types.h"

namespace keel {
class ThreadPool;
}
namespace keel::kv {
class KvCache;
}
namespace keel::model {
class Model;
}
namespace keel::tokenizer {
class Tokenizer;
}

namespace keel::engine {

struct LoadOptions {
  std::string model_path;
  EngineOptions engine;
  tensor::DType k_type = tensor::DType::kF16;  // -ctk
  tensor::DType v_type = tensor::DType::kF16;  // -ctv
  int32_t page_tokens = 32;
  uint64_t mem_limit_bytes = 0;  // --mem-limit; 0 = the machine's available memory
};

struct LoadedModel {
  std::shared_ptr<const model::Model> model;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
  MemoryPlan plan;
};

LoadedModel open_model(const LoadOptions& options);
// The plan alone (for `--dry-run` / `inspect --plan`) for an already loaded model.
MemoryPlan plan_model_memory(const model::Model& model, const LoadOptions& options);
std::unique_ptr<Engine> start_engine(const LoadedModel& loaded, const LoadOptions& options);

class ModelBackend : public Backend {
 public:
  ModelBackend(std::shared_ptr<const model::Model> model,
               std::shared_ptr<const tokenizer::Tokenizer> tokenizer, const LoadOptions& options);
  ~ModelBackend() override;

  int32_t n_vocab() const override;
  Opened open(std::span<const int32_t> prompt, int64_t max_reuse) override;
  int64_t length(SeqId seq) const override;
  void forward(std::span<const BatchEntry> batch, std::vector<float>* logits) override;
  void publish(SeqId seq, std::span<const int32_t> tokens) override;
  void release(SeqId seq) override;
  int64_t shift(SeqId seq, int64_t n_keep, int64_t n_discard) override;
  void check_invariants() const override;
  KvUsage kv_usage() const override;
  int64_t empty_attention_rows() const override;
  std::unique_ptr<TokenDecoder> make_decoder(bool render_special) const override;
  std::string token_piece(int32_t token) const override;
  bool is_end_of_generation(int32_t token) const override;

  const kv::KvCache& kv() const { return *kv_; }

 private:
  std::shared_ptr<const model::Model> model_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  bool flash_attention_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<kv::KvCache> kv_;
  std::vector<model::BatchEntry> entries_;  // forward()'s batch in the model's shape, reused
};

}  // namespace keel::engine
