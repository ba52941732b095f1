// ForwardPass — the state of one forward pass that architectures compose blocks over:
// the batch (tokens, positions, sequences), the KV cache, the thread pool and the logits
// being produced. It owns the K/V write + attention step so that every architecture goes
// through the same cache discipline.
//
// Contract: built by Model::forward after the batch is validated and KV reserved; used by
// one thread (the engine's), which drives `pool`. Rows are batch entries in batch order.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kernels/attention.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/hparams.h"

namespace keel {
class ThreadPool;
}

namespace keel::model {

// Buffers of forward passes, kept by the thread that drives them from one pass to the next
// so that a decode step allocates nothing once they have grown (Model::forward keeps one
// per thread). Contents are meaningful only during a pass.
struct ForwardScratch {
  std::vector<int32_t> tokens;
  std::vector<int64_t> positions;
  std::vector<kv::SeqId> seqs;
  std::vector<kv::SeqId> distinct_seqs;
  std::vector<size_t> seq_slot;  // row → index into distinct_seqs
  std::vector<int64_t> logit_rows;
  std::vector<kv::KvLayerView> views;  // [≥ distinct seqs]; page lists keep their capacity
  std::vector<const kv::KvLayerView*> row_views;  // [rows]
  std::vector<std::pair<kv::SeqId, int64_t>> seq_counts;  // Model::forward's validation
};

class ForwardPass {
 public:
  // `scratch` and `logits` are the caller's and must outlive the pass; logits() is `logits`.
  ForwardPass(const HParams& hp, std::span<const BatchEntry> batch, kv::KvCache& kv,
              ThreadPool& pool, const ForwardOptions& options, ForwardScratch& scratch,
              std::vector<float>& logits);

  const HParams& hp() const { return hp_; }
  const ForwardOptions& options() const { return options_; }
  ThreadPool* pool() const { return pool_; }
  int64_t n_rows() const { return static_cast<int64_t>(s_.tokens.size()); }
  const int32_t* tokens() const { return s_.tokens.data(); }
  const int64_t* positions() const { return s_.positions.data(); }

  // Writes this layer's K/V rows of every batch row into the cache, then attends.
  // q: [n_rows][n_head * head_dim_k], k: [n_rows][n_head_kv * head_dim_k],
  // v: [n_rows][n_head_kv * head_dim_v], out: [n_rows][n_head * head_dim_v].
  // sinks: [n_head] or null. Scale and soft-capping come from the layer's plan.
  void attend(int32_t layer, const float* q, const float* k, const float* v, const float* sinks,
              float* out);

  // Batch rows whose logits are wanted, ascending; logits() is [their count][n_vocab].
  const std::vector<int64_t>& logit_rows() const { return s_.logit_rows; }
  std::vector<float>& logits() { return logits_; }

 private:
  const HParams& hp_;
  kv::KvCache& kv_;
  ThreadPool* pool_;
  ForwardOptions options_;
  ForwardScratch& s_;
  std::vector<float>& logits_;
};

}  // namespace keel::model
