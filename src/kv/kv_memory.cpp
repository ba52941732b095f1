// KvCache: exact memory accounting (what a token costs, what the pools hold).
#include "core/error.h"
#include "kv/kv_state.h"

namespace keel::kv {

size_t KvCache::bytes_per_token(const KvLayout& layout, tensor::DType k_type,
                                tensor::DType v_type) {
  const size_t k = tensor::row_bytes(k_type, layout.n_kv_heads * layout.head_dim_k);
  const size_t v = tensor::row_bytes(v_type, layout.n_kv_heads * layout.head_dim_v);
  return layout.layer_window.size() * (k + v);
}

KvMemoryPlan KvCache::plan(const KvLayout& layout, const KvOptions& options) {
  const GroupLayout gl = make_group_layout(layout, options);
  KvMemoryPlan plan;
  for (const GroupSpec& s : gl.groups) {
    KvGroupPlan g;
    g.window = s.window;
    g.layers = s.layers;
    g.bytes_per_token = s.layers.size() * (s.k_row_bytes + s.v_row_bytes);
    g.page_bytes = s.page_bytes;
    g.pages = s.pages;
    g.pool_bytes = static_cast<size_t>(s.pages) * s.page_bytes;
    plan.bytes_per_token += g.bytes_per_token;
    plan.pool_bytes += g.pool_bytes;
    plan.groups.push_back(std::move(g));
  }
  return plan;
}

size_t KvCache::pool_bytes() const {
  size_t total = 0;
  for (const PagePool& p : impl_->pools) total += static_cast<size_t>(p.capacity()) * p.page_bytes();
  return total;
}

KvUsage KvCache::usage() const {
  KvUsage u;
  for (const PagePool& p : impl_->pools) {
    u.pages_used.push_back(p.used_count());
    u.pages_total.push_back(p.capacity());
  }
  u.prefix_nodes = impl_->index.size();
  u.evicted_nodes = impl_->evicted_nodes;
  u.copied_pages = impl_->copied_pages;
  return u;
}

}  // namespace keel::kv
