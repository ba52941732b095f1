#include "model/blocks.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/activation.h"
#include "kernels/norm.h"
#include "kernels/rope.h"

namespace keel::model {
namespace {

// One buffer per live intermediate of a pass; every user overwrites what it reads.
enum Slot { kX, kH, kY, kQ, kK, kV, kAttn, kGate, kUp, kPicked, kSlots };

// This thread's buffer for `slot`, at least n floats; grows to the largest batch seen and
// stays, so steady-state decode steps allocate nothing here.
float* scratch(Slot slot, int64_t n) {
  thread_local std::vector<float> buffers[kSlots];
  std::vector<float>& b = buffers[slot];
  if (static_cast<int64_t>(b.size()) < n) b.resize(static_cast<size_t>(n));
  return b.data();
}

// Runs fn(r0, r1) over ranges of rows [0, n) of row_elems elements each, split across the
// pass's pool when there is enough to split (prefill): the element-wise steps between the
// products ran on one thread while the others waited (~1-2% of pp512). Every element is
// computed alone, so the split changes no value.
template <class Fn>
void for_rows(const ForwardPass& fp, int64_t n, int64_t row_elems, Fn&& fn) {
  constexpr int64_t kMinElems = int64_t{1} << 16;
  ThreadPool* pool = fp.pool();
  if (pool == nullptr || pool->size() <= 1 || n < 2 || n * row_elems < kMinElems) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t grain = (n + 2 * pool->size() - 1) / (2 * pool->size());
  pool->parallel_for(n, grain, [&](int64_t r0, int64_t r1) { fn(r0, r1); });
}

}  // namespace

Residual::Residual(const ForwardPass& fp)
    : fp_(fp),
      x_(scratch(kX, fp.n_rows() * fp.hp().n_embd)),
      h_(scratch(kH, fp.n_rows() * fp.hp().n_embd)),
      y_(scratch(kY, fp.n_rows() * fp.hp().n_embd)) {}

void Residual::add(const float* pre_norm, const float* post_norm, Block block) {
  const int64_t n = fp_.n_rows(), d = fp_.hp().n_embd;
  const float eps = fp_.hp().norm_eps;
  for_rows(fp_, n, d, [&](int64_t r0, int64_t r1) { kernels::rms_norm(x_ + r0 * d, pre_norm, r1 - r0, d, eps, h_ + r0 * d); });
  block(h_, y_);
  for_rows(fp_, n, d, [&](int64_t r0, int64_t r1) {
    if (post_norm) kernels::rms_norm(y_ + r0 * d, post_norm, r1 - r0, d, eps, y_ + r0 * d);
    kernels::add_inplace(x_ + r0 * d, y_ + r0 * d, (r1 - r0) * d);
  });
}

void linear(const ForwardPass& fp, const Linear& l, const float* x, float* y) {
  kernels::matmul(l.w, x, fp.n_rows(), y, fp.pool());
  if (l.bias) kernels::add_rows(y, l.bias, fp.n_rows(), l.w.n_out);
}

void linear_shared_input(const ForwardPass& fp, std::initializer_list<const Linear*> ls, const float* x,
                         std::initializer_list<float*> ys) {
  if (ls.size() != ys.size() || ls.size() > static_cast<size_t>(kernels::kMaxSharedInput)) {
    throw Error(ErrorCode::kInternal, "linear_shared_input: " + std::to_string(ls.size()) + " layers for " +
                                          std::to_string(ys.size()) + " outputs");
  }
  const kernels::WeightMatrix* ws[kernels::kMaxSharedInput] = {};
  float* outs[kernels::kMaxSharedInput] = {};
  int n = 0;
  auto y = ys.begin();
  for (const Linear* l : ls) {
    ws[n] = &l->w;
    outs[n++] = *y++;
  }
  kernels::matmul_shared_input(ws, x, fp.n_rows(), outs, n, fp.pool());
  y = ys.begin();
  for (const Linear* l : ls) {
    if (l->bias) kernels::add_rows(*y, l->bias, fp.n_rows(), l->w.n_out);
    ++y;
  }
}

void embed(const ForwardPass& fp, const kernels::WeightMatrix& token_embd, float* x) {
  for (int64_t r = 0; r < fp.n_rows(); ++r) {
    const int32_t t = fp.tokens()[r];
    if (t < 0 || t >= token_embd.n_out) {
      throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(t) +
                                                   " outside the vocabulary [0, " +
                                                   std::to_string(token_embd.n_out) + ")");
    }
    kernels::weight_row(token_embd, t, x + r * token_embd.n_in);
  }
}

void self_attention(ForwardPass& fp, int32_t layer, const AttentionWeights& w, const float* h,
                    float* out) {
  const HParams& hp = fp.hp();
  const int64_t n = fp.n_rows();
  // q: [n][n_head*dk], k: [n][n_kv*dk], v: [n][n_kv*dv], attn: [n][n_head*dv]
  float* q = scratch(kQ, n * hp.n_head * hp.head_dim_k);
  float* k = scratch(kK, n * hp.n_head_kv * hp.head_dim_k);
  float* v = scratch(kV, n * hp.n_head_kv * hp.head_dim_v);
  float* attn = scratch(kAttn, n * hp.n_head * hp.head_dim_v);
  linear_shared_input(fp, {&w.q, &w.k, &w.v}, h, {q, k, v});
  const kernels::RopeParams& rope = hp.layers.at(static_cast<size_t>(layer)).rope;
  const int64_t dq = hp.n_head * hp.head_dim_k, dkv = hp.n_head_kv * hp.head_dim_k;
  for_rows(fp, n, dq + dkv, [&](int64_t r0, int64_t r1) {
    float* qr = q + r0 * dq;
    float* kr = k + r0 * dkv;
    if (w.q_norm) kernels::rms_norm(qr, w.q_norm, (r1 - r0) * hp.n_head, hp.head_dim_k, hp.norm_eps, qr);
    if (w.k_norm) kernels::rms_norm(kr, w.k_norm, (r1 - r0) * hp.n_head_kv, hp.head_dim_k, hp.norm_eps, kr);
    kernels::rope(qr, fp.positions() + r0, r1 - r0, hp.n_head, hp.head_dim_k, rope);
    kernels::rope(kr, fp.positions() + r0, r1 - r0, hp.n_head_kv, hp.head_dim_k, rope);
  });
  fp.attend(layer, q, k, v, w.sinks, attn);
  linear(fp, w.o, attn, out);
}

void gated_ffn(const ForwardPass& fp, const GatedFfnWeights& w, Activation act, const float* h,
               float* out) {
  const int64_t n = fp.n_rows(), n_ff = w.gate.w.n_out;
  // gate, up: [n][n_ff]
  float* gate = scratch(kGate, n * n_ff);
  float* up = scratch(kUp, n * n_ff);
  linear_shared_input(fp, {&w.gate, &w.up}, h, {gate, up});
  for_rows(fp, n, n_ff, [&](int64_t r0, int64_t r1) {
    float* g = gate + r0 * n_ff;
    const float* u = up + r0 * n_ff;
    if (act == Activation::kSilu) {
      kernels::silu_mul(g, u, (r1 - r0) * n_ff, g);
    } else {
      kernels::gelu_tanh_mul(g, u, (r1 - r0) * n_ff, g);
    }
  });
  linear(fp, w.down, gate, out);
}

void output_logits(ForwardPass& fp, const float* x, const float* norm,
                   const kernels::WeightMatrix& head, float final_softcap) {
  const HParams& hp = fp.hp();
  const auto& rows = fp.logit_rows();
  const int64_t n = static_cast<int64_t>(rows.size());
  if (n == 0) return;
  // picked: [n][n_embd] normalized rows that want logits
  float* picked = scratch(kPicked, n * hp.n_embd);
  for (int64_t i = 0; i < n; ++i) {
    kernels::rms_norm(x + rows[i] * hp.n_embd, norm, 1, hp.n_embd, hp.norm_eps, picked + i * hp.n_embd);
  }
  std::vector<float>& logits = fp.logits();
  logits.assign(static_cast<size_t>(n * head.n_out), 0.0f);
  kernels::matmul(head, picked, n, logits.data(), fp.pool());
  kernels::softcap(logits.data(), n * head.n_out, final_softcap);
}

}  // namespace keel::model
