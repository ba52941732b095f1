#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "kernels/activation.h"
#include "kernels/matmul.h"
#include "model/blocks.h"

namespace keel::model {

namespace {

// y[m][w.n_out] = x[m][w.n_in] · Wᵀ + bias
void expert_linear(const ForwardPass& fp, const kernels::WeightMatrix& w, const float* bias,
                   const float* x, int64_t m, float* y) {
  kernels::matmul(w, x, m, y, fp.pool());
  if (bias) kernels::add_rows(y, bias, m, w.n_out);
}

}  // namespace

void moe_ffn(const ForwardPass& fp, const MoeWeights& w, const MoeActivation& act, const float* h,
             float* out) {
  const int64_t n = fp.n_rows(), n_expert = w.router.w.n_out, k = w.n_used;
  const int64_t d = w.gate.first.n_in, n_ff = w.gate.first.n_out;
  if (k <= 0 || k > n_expert) {
    throw Error(ErrorCode::kInvalidArgument, "moe: experts per token " + std::to_string(k) +
                                                 " outside [1, " + std::to_string(n_expert) + "]");
  }
  // Buffers kept by the forward thread across passes (no allocation per decode step).
  struct Scratch {
    std::vector<float> logits, weight, slot_out, hx, g, u, y;
    std::vector<int64_t> chosen, order, rows;
  };
  thread_local Scratch sc;
  // logits: [n][n_expert]; chosen/weight: [n][k]
  std::vector<float>& logits = sc.logits;
  std::vector<float>& weight = sc.weight;
  std::vector<int64_t>& chosen = sc.chosen;
  std::vector<int64_t>& order = sc.order;
  logits.assign(static_cast<size_t>(n * n_expert), 0.0f);
  weight.assign(static_cast<size_t>(n * k), 0.0f);
  chosen.assign(static_cast<size_t>(n * k), 0);
  order.resize(static_cast<size_t>(n_expert));
  linear(fp, w.router, h, logits.data());
  for (int64_t r = 0; r < n; ++r) {
    const float* l = logits.data() + r * n_expert;
    std::iota(order.begin(), order.end(), 0);
    // The k largest logits, ties to the lower expert (a stable sort's first k, without its
    // buffer); NaN after every number.
    auto before = [&](int64_t a, int64_t b) {
      const float x = l[a], y = l[b];
      if (x > y) return true;
      if (x < y) return false;
      const bool nan_x = std::isnan(x), nan_y = std::isnan(y);
      if (nan_x != nan_y) return nan_y;
      return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int64_t s = 0; s < k; ++s) {
      chosen[r * k + s] = order[s];
      weight[r * k + s] = l[order[s]];
    }
    kernels::softmax(weight.data() + r * k, k);
  }

  // slot_out: [n][k][d] each selected expert's weighted output, summed in slot order below.
  std::vector<float>& slot_out = sc.slot_out;
  slot_out.assign(static_cast<size_t>(n * k * d), 0.0f);
  std::vector<int64_t>& rows = sc.rows;  // (r * k + s) of the rows routed to expert e
  std::vector<float>&hx = sc.hx, &g = sc.g, &u = sc.u, &y = sc.y;
  for (int64_t e = 0; e < n_expert; ++e) {
    rows.clear();
    for (int64_t i = 0; i < n * k; ++i) {
      if (chosen[i] == e) rows.push_back(i);
    }
    const int64_t m = static_cast<int64_t>(rows.size());
    if (m == 0) continue;
    // hx: [m][d], g/u: [m][n_ff], y: [m][d]
    hx.resize(m * d);
    g.resize(m * n_ff);
    u.resize(m * n_ff);
    y.resize(m * d);
    for (int64_t j = 0; j < m; ++j) {
      std::copy_n(h + (rows[j] / k) * d, d, hx.data() + j * d);
    }
    expert_linear(fp, w.gate.expert(e), w.gate.expert_bias(e), hx.data(), m, g.data());
    expert_linear(fp, w.up.expert(e), w.up.expert_bias(e), hx.data(), m, u.data());
    kernels::swiglu_oai(g.data(), u.data(), m * n_ff, act.alpha, act.limit, g.data());
    expert_linear(fp, w.down.expert(e), w.down.expert_bias(e), g.data(), m, y.data());
    for (int64_t j = 0; j < m; ++j) {
      float* dst = slot_out.data() + rows[j] * d;
      const float wt = weight[rows[j]];
      for (int64_t i = 0; i < d; ++i) dst[i] = wt * y[j * d + i];
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    float* o = out + r * d;
    std::copy_n(slot_out.data() + r * k * d, d, o);
    for (int64_t s = 1; s < k; ++s) kernels::add_inplace(o, slot_out.data() + (r * k + s) * d, d);
  }
}

}  // namespace keel::model
