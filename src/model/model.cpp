#include "model/model.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "gguf/gguf.h"
#include "kernels/rope.h"
#include "model/architecture.h"
#include "model/forward_pass.h"
#include "model/weights.h"

namespace keel::model {

Model::Model(const std::string& path) : file_(std::make_shared<const gguf::GgufFile>(path)) {
  load();
}

Model::Model(std::shared_ptr<const gguf::GgufFile> file) : file_(std::move(file)) {
  if (!file_) throw Error(ErrorCode::kInvalidArgument, "Model: null GGUF file");
  load();
}

Model::~Model() = default;

void Model::load() {
  hp_ = read_hparams(*file_);
  arch_ = make_architecture(hp_.arch);
  arch_->plan(*file_, hp_);
  binder_ = std::make_unique<WeightBinder>(*file_);
  arch_->bind(*binder_, hp_);
}

uint64_t Model::resident_bytes() const { return binder_->resident_bytes(); }

kv::KvLayout Model::kv_layout() const {
  kv::KvLayout layout;
  for (const LayerPlan& l : hp_.layers) layout.layer_window.push_back(l.window);
  layout.n_kv_heads = hp_.n_head_kv;
  layout.head_dim_k = hp_.head_dim_k;
  layout.head_dim_v = hp_.head_dim_v;
  return layout;
}

kv::KRotator Model::k_rotator() const {
  return [this](int32_t layer, float* k_rows, int64_t n_rows, int64_t delta) {
    if (layer < 0 || layer >= static_cast<int32_t>(hp_.layers.size())) {
      throw Error(ErrorCode::kInvalidArgument,
                  "k_rotator: layer " + std::to_string(layer) + " outside [0, " +
                      std::to_string(hp_.layers.size()) + ")");
    }
    kernels::rope_shift(k_rows, n_rows, hp_.n_head_kv, hp_.head_dim_k, delta,
                        hp_.layers[layer].rope);
  };
}

namespace {

// Rolls back every reservation unless the pass commits.
class KvReservation {
 public:
  // `counts` ((seq, n) pairs) must outlive the reservation.
  KvReservation(kv::KvCache& kv, const std::vector<std::pair<kv::SeqId, int64_t>>& counts)
      : kv_(kv), seqs_(counts) {}
  // Reserves n entries for each pair; if one fails, those already made roll back.
  void reserve_all() {
    for (; made_ < seqs_.size(); ++made_) kv_.reserve(seqs_[made_].first, seqs_[made_].second);
  }
  ~KvReservation() {
    if (committed_) return;
    for (size_t i = made_; i-- > 0;) {
      try {
        kv_.rollback(seqs_[i].first);
      } catch (...) {
        // Rollback of a reservation that exists cannot fail; never throw from a destructor.
      }
    }
  }
  void commit() {
    for (const auto& [seq, n] : seqs_) kv_.commit(seq, n);
    committed_ = true;
  }

 private:
  kv::KvCache& kv_;
  const std::vector<std::pair<kv::SeqId, int64_t>>& seqs_;
  size_t made_ = 0;
  bool committed_ = false;
};

}  // namespace

std::vector<float> Model::forward(std::span<const BatchEntry> batch, kv::KvCache& kv,
                                  ThreadPool& pool, const ForwardOptions& options) const {
  std::vector<float> logits;
  forward(batch, kv, pool, options, &logits);
  return logits;
}

void Model::forward(std::span<const BatchEntry> batch, kv::KvCache& kv, ThreadPool& pool,
                    const ForwardOptions& options, std::vector<float>* logits) const {
  logits->clear();
  if (batch.empty()) return;
  // Kept by the driving thread across passes (no allocation per decode step); a pass never
  // starts another on the same thread, so one per thread suffices.
  thread_local ForwardScratch scratch;
  // Validate everything before touching the cache.
  auto& counts = scratch.seq_counts;  // seq → entries, in first-seen order
  counts.clear();
  for (const BatchEntry& e : batch) {
    if (e.token < 0 || e.token >= hp_.n_vocab) {
      throw Error(ErrorCode::kInvalidArgument, "forward: token id " + std::to_string(e.token) +
                                                   " outside the vocabulary [0, " +
                                                   std::to_string(hp_.n_vocab) + ")");
    }
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == e.seq; });
    if (it == counts.end()) {
      counts.emplace_back(e.seq, 0);
      it = counts.end() - 1;
    }
    const int64_t expected = kv.length(e.seq) + it->second;
    if (e.pos != expected) {
      throw Error(ErrorCode::kInvalidArgument,
                  "forward: sequence " + std::to_string(e.seq) + " entry at position " +
                      std::to_string(e.pos) + ", expected " + std::to_string(expected) +
                      " (positions must continue the cached sequence consecutively)");
    }
    ++it->second;
  }

  KvReservation reservation(kv, counts);
  reservation.reserve_all();
  ForwardPass fp(hp_, batch, kv, pool, options, scratch, *logits);
  arch_->forward(fp);
  reservation.commit();
}

}  // namespace keel::model
