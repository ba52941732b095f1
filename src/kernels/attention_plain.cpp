// Plain attention path: all scores of a row, one softmax, then the weighted V sum.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_internal.h"

namespace keel::kernels::detail {

bool attend_plain(const HeadGroupTask& t, const AttentionParams& p) {
  const kv::KvLayerView& v = *t.view;
  const int64_t dk = v.head_dim_k, dv = v.head_dim_v, g_n = t.group;
  const int64_t n_keys = t.keys.hi - t.keys.lo + 1;
  // Per-thread buffers that grow in steps of 256 keys, so a decode step (one more key than
  // the last) allocates nothing.
  thread_local std::vector<float> scores, scratch, inv_sum;
  thread_local std::vector<int64_t> used;
  const int64_t key_cap = (n_keys + 255) / 256 * 256;
  if (scores.size() < static_cast<size_t>(g_n * key_cap)) scores.resize(static_cast<size_t>(g_n * key_cap));
  if (used.capacity() < static_cast<size_t>(key_cap)) used.reserve(static_cast<size_t>(key_cap));
  scratch.resize(static_cast<size_t>(std::max(dk, dv)));
  inv_sum.resize(static_cast<size_t>(g_n));
  used.clear();

  // scores: [group][n_used] (row stride n_keys)
  for (int64_t kp = t.keys.lo; kp <= t.keys.hi; ++kp) {
    const float* k = k_row(v, kp, t.kvh, scratch.data());
    if (!k) continue;
    const int64_t j = static_cast<int64_t>(used.size());
    for (int64_t g = 0; g < g_n; ++g) scores[g * n_keys + j] = score(t.q + g * dk, k, dk, p);
    used.push_back(kp);
  }
  const int64_t n_used = static_cast<int64_t>(used.size());
  std::memset(t.out, 0, sizeof(float) * static_cast<size_t>(g_n * dv));
  if (n_used == 0) return false;

  for (int64_t g = 0; g < g_n; ++g) {
    float* s = scores.data() + g * n_keys;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < n_used; ++j) max = std::max(max, s[j]);
    const float sink = p.sinks ? p.sinks[t.first_head + g] : 0.0f;
    if (p.sinks) max = std::max(max, sink);
    double sum = 0.0;
    for (int64_t j = 0; j < n_used; ++j) {
      s[j] = std::exp(s[j] - max);
      sum += s[j];
    }
    if (p.sinks) sum += std::exp(sink - max);  // denominator only
    inv_sum[g] = static_cast<float>(1.0 / sum);
  }
  for (int64_t j = 0; j < n_used; ++j) {
    const float* vr = v_row(v, used[j], t.kvh, scratch.data());
    for (int64_t g = 0; g < g_n; ++g) {
      const float w = scores[g * n_keys + j];
      float* o = t.out + g * dv;
      for (int64_t d = 0; d < dv; ++d) o[d] += w * vr[d];
    }
  }
  for (int64_t g = 0; g < g_n; ++g) {
    float* o = t.out + g * dv;
    for (int64_t d = 0; d < dv; ++d) o[d] *= inv_sum[g];
  }
  return true;
}

}  // namespace keel::kernels::detail
