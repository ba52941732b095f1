// Attention of query rows over one layer of the paged KV cache (kv::KvLayerView).
//
// For query row r at position p (of the sequence whose view is views[r]), the visible keys
// are k with max(first_held, p − window + 1 if window > 0 else 0) <= k <= p, k < n_positions,
// in a held page. Scores s = scale · q·k, optionally soft-capped (cap·tanh(s/cap)), are
// softmaxed together with an optional per-head sink logit that joins the denominator only,
// and weight the V rows. Query head h reads kv head h / (n_head / n_kv_heads) (GQA/MQA).
// K/V rows of any type are read with tensor::dequantize_row.
//
// Two paths: plain (all scores of a row, then softmax) and flash (tiles = cache pages in
// position order, online softmax, combined in one fixed order). Each output element is
// reduced over keys in ascending position order whatever the batch, so results do not
// depend on batch size, chunking or thread count (work is split across rows × kv heads).
// The flash path's arithmetic is defined operation by operation in attention_flash.h
// (16-lane dots, exp_defined, a fixed reduction tree); its AVX-512 and AVX2 kernels read
// f32/f16/bf16/q8_0 K/V straight from the pages and give the scalar twin's bits, so the
// result does not depend on the ISA either. The plain path uses dot_f32 and std::exp.
//
// A row with no visible key gets zeros and increments empty_attention_rows(); it never
// asserts. Invalid shapes (n_head not a multiple of n_kv_heads, ...) throw keel::Error.
// Thread-safety: reads views only; `pool` is driven by the caller (nullptr = inline).
#pragma once

#include <cstdint>

#include "kv/kv_cache.h"

namespace keel {
class ThreadPool;
}

namespace keel::kernels {

struct AttentionParams {
  int64_t n_head = 0;            // query heads
  float scale = 1.0f;            // multiplies q·k (usually 1/√head_dim)
  float softcap = 0.0f;          // > 0: s = softcap · tanh(s / softcap)
  const float* sinks = nullptr;  // [n_head] sink logits, or nullptr; not owned
  bool flash = false;            // flash (tiled, online softmax) instead of plain path
};

// q:   [n_q][n_head * head_dim_k]
// pos: [n_q] absolute positions
// views: [n_q] the layer view of each row's sequence (rows may share a view)
// out: [n_q][n_head * head_dim_v]
void attention(const float* q, const int64_t* pos, const kv::KvLayerView* const* views,
               int64_t n_q, const AttentionParams& params, float* out, ThreadPool* pool);

// Number of query rows (process-wide, since start) that had no visible key.
uint64_t empty_attention_rows();

}  // namespace keel::kernels
