#include "model/forward_pass.h"

#include <algorithm>

#include "core/thread_pool.h"

namespace keel::model {

ForwardPass::ForwardPass(const HParams& hp, std::span<const BatchEntry> batch, kv::KvCache& kv,
                         ThreadPool& pool, const ForwardOptions& options)
    : hp_(hp), kv_(kv), pool_(&pool), options_(options) {
  for (size_t r = 0; r < batch.size(); ++r) {
    const BatchEntry& e = batch[r];
    tokens_.push_back(e.token);
    positions_.push_back(e.pos);
    seqs_.push_back(e.seq);
    auto it = std::find(distinct_seqs_.begin(), distinct_seqs_.end(), e.seq);
    seq_slot_.push_back(static_cast<size_t>(it - distinct_seqs_.begin()));
    if (it == distinct_seqs_.end()) distinct_seqs_.push_back(e.seq);
    if (e.want_logits) logit_rows_.push_back(static_cast<int64_t>(r));
  }
}

void ForwardPass::attend(int32_t layer, const float* q, const float* k, const float* v,
                         const float* sinks, float* out) {
  const int64_t k_dim = hp_.n_head_kv * hp_.head_dim_k, v_dim = hp_.n_head_kv * hp_.head_dim_v;
  for (int64_t r = 0; r < n_rows(); ++r) {
    kv_.write_k(seqs_[r], layer, positions_[r], k + r * k_dim);
    kv_.write_v(seqs_[r], layer, positions_[r], v + r * v_dim);
  }
  // Views are taken after the writes (writes invalidate views).
  std::vector<kv::KvLayerView> views;
  views.reserve(distinct_seqs_.size());
  for (kv::SeqId s : distinct_seqs_) views.push_back(kv_.view(s, layer));
  std::vector<const kv::KvLayerView*> row_views(static_cast<size_t>(n_rows()));
  for (int64_t r = 0; r < n_rows(); ++r) row_views[r] = &views[seq_slot_[r]];

  const LayerPlan& plan = hp_.layers.at(static_cast<size_t>(layer));
  kernels::AttentionParams p;
  p.n_head = hp_.n_head;
  p.scale = plan.attn_scale;
  p.softcap = plan.attn_softcap;
  p.sinks = sinks;
  p.flash = options_.flash_attention;
  kernels::attention(q, positions_.data(), row_views.data(), n_rows(), p, out, pool_);
}

}  // namespace keel::model
