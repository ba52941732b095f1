// Model — a loaded GGUF model: hyper-parameters, weights bound by name (kept in their
// stored type: quantized ones in the file's memory map, float matrices copied out of it,
// model/weights.h) and the forward pass of its architecture.
//
// Contract:
//  - Loading validates metadata and every tensor's shape; failures throw keel::Error
//    naming the file, the tensor or key, and the expectation. Nothing is dequantized in
//    bulk; the mapping is shared (file()) with e.g. the tokenizer.
//  - forward() runs one batch over the KV cache: entries of a sequence must carry
//    consecutive positions starting at kv.length(seq) (else kInvalidArgument, nothing
//    changed). It reserves KV for each sequence, writes K/V per layer, attends through
//    views and commits at the end; on any exception the reservations are rolled back, so
//    a failed pass leaves the cache as it was.
//  - Batch invariance: a row's logits are bitwise the same whatever else is in the batch,
//    however the sequence was chunked and however many threads the pool has.
//  - Thread-safety: immutable after load. forward() is driven by one thread at a time per
//    (cache, pool) pair; the pool is the caller's (persistent, no threads per call).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/hparams.h"

namespace keel {
class ThreadPool;
}
namespace keel::gguf {
class GgufFile;
}

namespace keel::model {

class Architecture;
class WeightBinder;

// What Model::prepare_weights did, for load logs and `keel bench`.
struct PrepareStats {
  int64_t matrices_packed = 0;  // views with a packed copy
  uint64_t packed_bytes = 0;    // memory the packed copies hold
  uint64_t released_bytes = 0;  // pages of the mapped originals given back
  double seconds = 0;           // wall time of packing + release
};

class Model {
 public:
  explicit Model(const std::string& path);
  explicit Model(std::shared_ptr<const gguf::GgufFile> file);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const HParams& hparams() const { return hp_; }
  const gguf::GgufFile& file() const { return *file_; }
  std::shared_ptr<const gguf::GgufFile> shared_file() const { return file_; }
  int64_t n_vocab() const { return hp_.n_vocab; }

  // What the KV cache must hold for this model (per-layer windows, heads, head dims).
  kv::KvLayout kv_layout() const;
  // Re-rotates cached K rows by a position delta (context shift); correct for partial
  // rotary dims and per-layer rope. The returned function refers to this Model.
  kv::KRotator k_rotator() const;

  // Returns logits [n entries with want_logits][n_vocab], in batch order.
  std::vector<float> forward(std::span<const BatchEntry> batch, kv::KvCache& kv,
                             ThreadPool& pool, const ForwardOptions& options = {}) const;
  // The same into *logits (resized; its capacity reused). With the per-thread scratch this
  // keeps, a decode step of an already-seen shape allocates nothing.
  void forward(std::span<const BatchEntry> batch, kv::KvCache& kv, ThreadPool& pool,
               const ForwardOptions& options, std::vector<float>* logits) const;

  // Part of loading, done by the owner of a pool: packs every weight the integer SIMD
  // kernels read packed (kernels::prepare_weights), one matrix per task on `pool`, instead
  // of on first use; then gives back the mapped pages of those originals that nothing else
  // reads (the embedding's rows are looked up, so it stays). A reference or twin path that
  // reads a released original re-faults it from the file: results never change. Does
  // nothing under KEEL_MATMUL=reference|twin (packed copies would go unused). Calling it
  // again is cheap; safe while forward() runs (packing is per view, under its cache's lock).
  PrepareStats prepare_weights(ThreadPool& pool) const;
  // Bytes of float (F32/F16/BF16) matrices copied at load out of the mapping into memory
  // that may sit on 2 MiB pages (model/weights.h says why).
  uint64_t resident_bytes() const;

 private:
  void load();

  std::shared_ptr<const gguf::GgufFile> file_;
  HParams hp_;
  std::unique_ptr<WeightBinder> binder_;
  std::unique_ptr<Architecture> arch_;
};

}  // namespace keel::model
