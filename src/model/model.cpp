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
  explicit KvReservation(kv::KvCache& kv) : kv_(kv) {}
  ~KvReservation() {
    if (committed_) return;
    for (auto it = seqs_.rbegin(); it != seqs_.rend(); ++it) {
      try {
        kv_.rollback(it->first);
      } catch (...) {
        // Rollback of a reservation that exists cannot fail; never throw from a destructor.
      }
    }
  }
  void reserve(kv::SeqId seq, int64_t n) {
    kv_.reserve(seq, n);
    seqs_.emplace_back(seq, n);
  }
  void commit() {
    for (const auto& [seq, n] : seqs_) kv_.commit(seq, n);
    committed_ = true;
  }

 private:
  kv::KvCache& kv_;
  std::vector<std::pair<kv::SeqId, int64_t>> seqs_;
  bool committed_ = false;
};

}  // namespace

std::vector<float> Model::forward(std::span<const BatchEntry> batch, kv::KvCache& kv,
                                  ThreadPool& pool, const ForwardOptions& options) const {
  if (batch.empty()) return {};
  // Validate everything before touching the cache.
  std::vector<std::pair<kv::SeqId, int64_t>> counts;  // seq → entries, in first-seen order
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

  KvReservation reservation(kv);
  for (const auto& [seq, n] : counts) reservation.reserve(seq, n);
  ForwardPass fp(hp_, batch, kv, pool, options);
  arch_->forward(fp);
  reservation.commit();
  return std::move(fp.logits());
}

}  // namespace keel::model
