// Flash attention path: tiles are cache pages in position order; each tile updates a
// running (max, sum, accumulator) per query head (online softmax). Tiles are aligned to
// absolute positions (page boundaries), so the combination order does not depend on how
// many queries arrive together or how the prompt was chunked.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_internal.h"

namespace keel::kernels::detail {

bool attend_flash(const HeadGroupTask& t, const AttentionParams& p) {
  const kv::KvLayerView& v = *t.view;
  const int64_t dk = v.head_dim_k, dv = v.head_dim_v, g_n = t.group;
  const int64_t pt = v.page_tokens;
  thread_local std::vector<float> tile_s, scratch, m, l;
  thread_local std::vector<int64_t> tile_pos;
  tile_s.resize(static_cast<size_t>(g_n * pt));
  scratch.resize(static_cast<size_t>(std::max(dk, dv)));
  m.assign(static_cast<size_t>(g_n), -std::numeric_limits<float>::infinity());
  l.assign(static_cast<size_t>(g_n), 0.0f);
  std::memset(t.out, 0, sizeof(float) * static_cast<size_t>(g_n * dv));
  bool any = false;

  for (int64_t page_lo = (t.keys.lo / pt) * pt; page_lo <= t.keys.hi; page_lo += pt) {
    const int64_t a = std::max(page_lo, t.keys.lo), b = std::min(page_lo + pt - 1, t.keys.hi);
    tile_pos.clear();
    for (int64_t kp = a; kp <= b; ++kp) {
      const float* k = k_row(v, kp, t.kvh, scratch.data());
      if (!k) continue;
      const int64_t j = static_cast<int64_t>(tile_pos.size());
      for (int64_t g = 0; g < g_n; ++g) tile_s[g * pt + j] = score(t.q + g * dk, k, dk, p);
      tile_pos.push_back(kp);
    }
    const int64_t n = static_cast<int64_t>(tile_pos.size());
    if (n == 0) continue;
    any = true;
    for (int64_t g = 0; g < g_n; ++g) {
      float* s = tile_s.data() + g * pt;
      float m_new = m[g];
      for (int64_t j = 0; j < n; ++j) m_new = std::max(m_new, s[j]);
      const float c = std::exp(m[g] - m_new);
      float sum = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        s[j] = std::exp(s[j] - m_new);
        sum += s[j];
      }
      l[g] = l[g] * c + sum;
      m[g] = m_new;
      float* o = t.out + g * dv;
      for (int64_t d = 0; d < dv; ++d) o[d] *= c;
    }
    for (int64_t j = 0; j < n; ++j) {
      const float* vr = v_row(v, tile_pos[j], t.kvh, scratch.data());
      for (int64_t g = 0; g < g_n; ++g) {
        const float w = tile_s[g * pt + j];
        float* o = t.out + g * dv;
        for (int64_t d = 0; d < dv; ++d) o[d] += w * vr[d];
      }
    }
  }
  if (!any) return false;

  for (int64_t g = 0; g < g_n; ++g) {
    float denom = l[g];
    float* o = t.out + g * dv;
    if (p.sinks) {
      const float sink = p.sinks[t.first_head + g];
      const float m_f = std::max(m[g], sink);
      const float c = std::exp(m[g] - m_f);
      denom = l[g] * c + std::exp(sink - m_f);  // the sink joins the denominator only
      for (int64_t d = 0; d < dv; ++d) o[d] *= c;
    }
    const float inv = 1.0f / denom;
    for (int64_t d = 0; d < dv; ++d) o[d] *= inv;
  }
  return true;
}

}  // namespace keel::kernels::detail
