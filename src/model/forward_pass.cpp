#include "model/forward_pass.h"

#include <algorithm>

#include "core/thread_pool.h"

namespace keel::model {

ForwardPass::ForwardPass(const HParams& hp, std::span<const BatchEntry> batch, kv::KvCache& kv,
                         ThreadPool& pool, const ForwardOptions& options, ForwardScratch& scratch,
                         std::vector<float>& logits)
    : hp_(hp), kv_(kv), pool_(&pool), options_(options), s_(scratch), logits_(logits) {
  s_.tokens.clear();
  s_.positions.clear();
  s_.seqs.clear();
  s_.distinct_seqs.clear();
  s_.seq_slot.clear();
  s_.logit_rows.clear();
  for (size_t r = 0; r < batch.size(); ++r) {
    const BatchEntry& e = batch[r];
    s_.tokens.push_back(e.token);
    s_.positions.push_back(e.pos);
    s_.seqs.push_back(e.seq);
    auto it = std::find(s_.distinct_seqs.begin(), s_.distinct_seqs.end(), e.seq);
    s_.seq_slot.push_back(static_cast<size_t>(it - s_.distinct_seqs.begin()));
    if (it == s_.distinct_seqs.end()) s_.distinct_seqs.push_back(e.seq);
    if (e.want_logits) s_.logit_rows.push_back(static_cast<int64_t>(r));
  }
}

void ForwardPass::attend(int32_t layer, const float* q, const float* k, const float* v,
                         const float* sinks, float* out) {
  const int64_t k_dim = hp_.n_head_kv * hp_.head_dim_k, v_dim = hp_.n_head_kv * hp_.head_dim_v;
  for (int64_t r = 0; r < n_rows(); ++r) {
    kv_.write_k(s_.seqs[r], layer, s_.positions[r], k + r * k_dim);
    kv_.write_v(s_.seqs[r], layer, s_.positions[r], v + r * v_dim);
  }
  // Views are taken after the writes (writes invalidate views). The scratch views never
  // shrink, so their page lists keep their capacity from step to step.
  if (s_.views.size() < s_.distinct_seqs.size()) s_.views.resize(s_.distinct_seqs.size());
  for (size_t i = 0; i < s_.distinct_seqs.size(); ++i) kv_.view(s_.distinct_seqs[i], layer, &s_.views[i]);
  s_.row_views.resize(static_cast<size_t>(n_rows()));
  for (int64_t r = 0; r < n_rows(); ++r) s_.row_views[r] = &s_.views[s_.seq_slot[r]];

  const LayerPlan& plan = hp_.layers.at(static_cast<size_t>(layer));
  kernels::AttentionParams p;
  p.n_head = hp_.n_head;
  p.scale = plan.attn_scale;
  p.softcap = plan.attn_softcap;
  p.sinks = sinks;
  p.flash = options_.flash_attention;
  kernels::attention(q, s_.positions.data(), s_.row_views.data(), n_rows(), p, out, pool_);
}

}  // namespace keel::model
