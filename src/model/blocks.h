// Building blocks that architectures compose into a forward pass. They are data-driven
// (optional biases / norms are used when bound), never switch on the architecture name:
// what differs per architecture lives in its own arch_*.cpp.
//
// All blocks work on [n_rows][width] f32 activations of a ForwardPass, reduce in a fixed
// order per output element (kernels/), and throw keel::Error on bad input. Their
// intermediate buffers are per-thread scratch kept across passes (no allocation per decode
// step once a thread has run a batch as large): a forward pass runs on one thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/function_ref.h"
#include "model/forward_pass.h"
#include "model/weights.h"

namespace keel::model {

struct AttentionWeights {
  Linear q, k, v, o;
  const float* q_norm = nullptr;  // [head_dim_k] per-head RMS norm (qwen3, gemma3)
  const float* k_norm = nullptr;
  const float* sinks = nullptr;   // [n_head] (gpt-oss)
};

enum class Activation { kSilu, kGeluTanh };

struct GatedFfnWeights {
  Linear gate, up, down;
};

// The residual stream x [n_rows][n_embd] of a pass, with scratch for one block. Its
// buffers are this thread's reusable scratch (one Residual per thread at a time).
class Residual {
 public:
  explicit Residual(const ForwardPass& fp);
  float* x() { return x_; }
  // Non-owning (no allocation per call): the block must outlive add() — a lambda argument does.
  using Block = FunctionRef<void(const float* h, float* y)>;
  // x += post_norm(block(rms_norm(x, pre_norm))); post_norm may be null (no norm).
  void add(const float* pre_norm, const float* post_norm, Block block);

 private:
  const ForwardPass& fp_;
  float *x_, *h_, *y_;  // each [n_rows][n_embd]
};

// y[n_rows][l.w.n_out] = x[n_rows][l.w.n_in] · Wᵀ (+ bias)
void linear(const ForwardPass& fp, const Linear& l, const float* x, float* y);
// linear() for several layers of one input (q/k/v, gate/up): the same results, computed as
// one job (kernels::matmul_shared_input); at most kernels::kMaxSharedInput layers, one y each.
void linear_shared_input(const ForwardPass& fp, std::initializer_list<const Linear*> ls, const float* x,
                         std::initializer_list<float*> ys);

// x[n_rows][n_embd] = rows `tokens` of the embedding matrix (token ids range-checked).
void embed(const ForwardPass& fp, const kernels::WeightMatrix& token_embd, float* x);

// out[n_rows][n_embd] = o(attention(rope(norm?(q(h))), rope(norm?(k(h))), v(h)))
void self_attention(ForwardPass& fp, int32_t layer, const AttentionWeights& w, const float* h,
                    float* out);

// out[n_rows][n_embd] = down(act(gate(h)) · up(h))
void gated_ffn(const ForwardPass& fp, const GatedFfnWeights& w, Activation act, const float* h,
               float* out);

// For the rows that want logits: fp.logits() = softcap(head(rms_norm(x, norm))).
void output_logits(ForwardPass& fp, const float* x, const float* norm,
                   const kernels::WeightMatrix& head, float final_softcap);

}  // namespace keel::model
