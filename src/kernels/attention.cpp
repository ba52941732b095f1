#include "kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/attention_internal.h"
#include "kernels/dot.h"
#include "kernels/widen.h"

namespace keel::kernels {

namespace {
std::atomic<uint64_t> g_empty_rows{0};

void check_view(const kv::KvLayerView& v, const AttentionParams& p) {
  if (v.n_kv_heads <= 0 || p.n_head <= 0 || p.n_head % v.n_kv_heads != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "attention: n_head " + std::to_string(p.n_head) +
                    " is not a positive multiple of n_kv_heads " + std::to_string(v.n_kv_heads));
  }
  if (v.page_tokens <= 0 || v.head_dim_k <= 0 || v.head_dim_v <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "attention: malformed KV view (page_tokens " +
                                                 std::to_string(v.page_tokens) + ")");
  }
}
}  // namespace

uint64_t empty_attention_rows() { return g_empty_rows.load(std::memory_order_relaxed); }

namespace detail {

KeyRange visible_keys(const kv::KvLayerView& v, int64_t pos) {
  KeyRange r;
  r.hi = std::min(pos, v.n_positions - 1);
  r.lo = std::max<int64_t>(0, v.first_held);
  if (v.window > 0) r.lo = std::max(r.lo, pos - v.window + 1);
  return r;
}

namespace {
const float* row_at(const std::vector<const uint8_t*>& pages, tensor::DType type, int32_t pt,
                    size_t token_stride, size_t head_bytes, int64_t d, int64_t p, int64_t h,
                    float* scratch) {
  const size_t page = static_cast<size_t>(p / pt);
  if (page >= pages.size() || pages[page] == nullptr) return nullptr;
  const uint8_t* src = pages[page] + static_cast<size_t>(p % pt) * token_stride +
                       static_cast<size_t>(h) * head_bytes;
  if (type == tensor::DType::kF32) return reinterpret_cast<const float*>(src);
  widen_row(type, src, scratch, d);  // tensor::dequantize_row's values, SIMD where it can
  return scratch;
}
}  // namespace

const float* k_row(const kv::KvLayerView& v, int64_t p, int64_t h, float* scratch) {
  return row_at(v.k_pages, v.k_type, v.page_tokens, v.k_token_stride, v.k_head_bytes,
                v.head_dim_k, p, h, scratch);
}

const float* v_row(const kv::KvLayerView& v, int64_t p, int64_t h, float* scratch) {
  return row_at(v.v_pages, v.v_type, v.page_tokens, v.v_token_stride, v.v_head_bytes,
                v.head_dim_v, p, h, scratch);
}

float score(const float* q, const float* k, int64_t d, const AttentionParams& p) {
  float s = dot_f32(q, k, d) * p.scale;
  if (p.softcap > 0.0f) s = p.softcap * std::tanh(s / p.softcap);
  return s;
}

}  // namespace detail

void attention(const float* q, const int64_t* pos, const kv::KvLayerView* const* views,
               int64_t n_q, const AttentionParams& params, float* out, ThreadPool* pool) {
  if (n_q <= 0) return;
  // Validate every view first so no work starts on bad input.
  for (int64_t r = 0; r < n_q; ++r) {
    if (!views[r]) throw Error(ErrorCode::kInvalidArgument, "attention: null KV view");
    check_view(*views[r], params);
    if (views[r]->head_dim_k != views[0]->head_dim_k ||
        views[r]->head_dim_v != views[0]->head_dim_v ||
        views[r]->n_kv_heads != views[0]->n_kv_heads) {
      throw Error(ErrorCode::kInvalidArgument, "attention: views of one call differ in shape");
    }
  }
  const kv::KvLayerView& v0 = *views[0];
  const int64_t n_kv = v0.n_kv_heads, group = params.n_head / n_kv;
  const int64_t dk = v0.head_dim_k, dv = v0.head_dim_v;
  const int64_t q_stride = params.n_head * dk, o_stride = params.n_head * dv;

  std::vector<detail::KeyRange> ranges(n_q);
  for (int64_t r = 0; r < n_q; ++r) {
    ranges[r] = detail::visible_keys(*views[r], pos[r]);
    if (ranges[r].empty()) {
      // Defined result for a fully masked row: zeros, counted, never an assert.
      g_empty_rows.fetch_add(1, std::memory_order_relaxed);
      std::memset(out + r * o_stride, 0, sizeof(float) * static_cast<size_t>(o_stride));
    }
  }

  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = i / n_kv, kvh = i % n_kv;
      if (ranges[r].empty()) continue;
      detail::HeadGroupTask t{views[r], q + r * q_stride + kvh * group * dk,
                              out + r * o_stride + kvh * group * dv, kvh, group, kvh * group,
                              ranges[r]};
      const bool had_keys =
          params.flash ? detail::attend_flash(t, params) : detail::attend_plain(t, params);
      // Every kv head of a row sees the same pages: count the row once.
      if (!had_keys && kvh == 0) g_empty_rows.fetch_add(1, std::memory_order_relaxed);
    }
  };
  // Small jobs run inline (waking workers costs more); where work runs never changes its
  // order, so results are unaffected.
  int64_t work = 0;
  for (int64_t r = 0; r < n_q; ++r) {
    if (!ranges[r].empty()) work += (ranges[r].hi - ranges[r].lo + 1) * params.n_head * (dk + dv);
  }
  const int64_t n_tasks = n_q * n_kv;
  if (pool == nullptr || pool->size() <= 1 || n_tasks == 1 || work < (1 << 14)) {
    run(0, n_tasks);
  } else {
    pool->parallel_for(n_tasks, 1, run);
  }
}

}  // namespace keel::kernels
