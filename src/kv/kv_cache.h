// KvCache — the paged key/value cache. It knows no architecture: the model describes its
// layers (KvLayout) and the cache stores, per layer group, pages of K and V rows in the
// chosen types. One source of truth for positions: a sequence's length lives here only.
//
// Contract (see docs/ARCHITECTURE.md §KV):
//  - Pages hold `page_tokens` consecutive positions of every layer of one group (K and V).
//    Layers with the same sliding window form one group; window 0 = full attention.
//  - A sequence is a page table per group plus one length shared by all groups. Every
//    operation keeps every group consistent in one call (no group ever disagrees with
//    another about the length).
//  - Writing new positions: reserve(seq, n) makes positions [len, len+n) writable (pages
//    allocated, shared pages copied on write); write_k/v() fill rows layer by layer; then
//    commit(seq, n) makes them part of the sequence, or rollback(seq) discards them. A
//    failed forward pass therefore never leaves half-written positions visible.
//  - Every query at position p of a sequence sees at least its own key: attention views
//    always cover [first_visible(p), p] with p < len after commit (or within the
//    reserved range during the forward pass).
//  - Thread-safety: not thread-safe; owned by the engine thread. Views are valid until the
//    next mutating call.
//  - Errors: bad sequence ids, out-of-range positions, an exhausted page pool → keel::Error
//    (kInvalidArgument / kOutOfMemory) naming the sequence and positions; never abort.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tensor/types.h"

namespace keel::kv {

using SeqId = int32_t;

// What the model tells the cache about its attention layers.
struct KvLayout {
  std::vector<int32_t> layer_window;  // per layer: 0 = full attention, else n_swa
  int64_t n_kv_heads = 0;             // same for every layer
  int64_t head_dim_k = 0;             // per head
  int64_t head_dim_v = 0;
  int32_t n_layers() const { return static_cast<int32_t>(layer_window.size()); }
};

struct KvOptions {
  tensor::DType k_type = tensor::DType::kF16;
  tensor::DType v_type = tensor::DType::kF16;
  int32_t page_tokens = 32;
  int64_t max_tokens = 4096;  // capacity of the full-attention pool, in tokens (all seqs)
  int32_t max_sequences = 16;
};

// Read-only view of one layer of one sequence, for attention kernels.
// Page i covers positions [i*page_tokens, (i+1)*page_tokens). Within a page, the K row of
// position p and kv-head h starts at k_pages[i] + (p % page_tokens) * k_token_stride +
// h * k_head_bytes, holding head_dim_k elements of k_type (same for V).
struct KvLayerView {
  tensor::DType k_type, v_type;
  int64_t n_kv_heads = 0, head_dim_k = 0, head_dim_v = 0;
  int32_t page_tokens = 0;
  int32_t window = 0;          // 0 = full attention; else keys p - window < k <= p
  int64_t n_positions = 0;     // positions [0, n_positions) may be addressed
  int64_t first_held = 0;      // positions below this are not held (sliding window)
  size_t k_token_stride = 0, k_head_bytes = 0;
  size_t v_token_stride = 0, v_head_bytes = 0;
  std::vector<const uint8_t*> k_pages, v_pages;  // nullptr where not held
};

// Re-rotation of K rows for a context shift; supplied by the model (the cache knows no
// rope). Rotates `n_rows` rows of one layer (each n_kv_heads * head_dim_k floats) by
// `delta` positions.
using KRotator = std::function<void(int32_t layer, float* k_rows, int64_t n_rows, int64_t delta)>;

class KvCache {
 public:
  KvCache(const KvLayout& layout, const KvOptions& options);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvLayout& layout() const;
  const KvOptions& options() const;

  SeqId create();
  void release(SeqId seq);
  int64_t length(SeqId seq) const;

  void reserve(SeqId seq, int64_t n_new);
  // Rows are f32 [n_kv_heads * head_dim]; converted to the cache type.
  void write_k(SeqId seq, int32_t layer, int64_t pos, const float* row);
  void write_v(SeqId seq, int32_t layer, int64_t pos, const float* row);
  void commit(SeqId seq, int64_t n_new);
  void rollback(SeqId seq);

  KvLayerView view(SeqId seq, int32_t layer) const;

  // A new sequence sharing the first n positions of src (copy-on-write).
  SeqId fork(SeqId src, int64_t n);
  // Drops positions [n, end). Returns the resulting length, which is n unless a sliding
  // group no longer holds the window that position n-1 needs; then it is the longest
  // prefix every group can serve (the caller recomputes the rest).
  int64_t truncate(SeqId seq, int64_t n);
  // Context shift: drops [n_keep, n_keep + n_discard), renumbers the rest, re-rotates K.
  void shift(SeqId seq, int64_t n_keep, int64_t n_discard, const KRotator& rotate);

  // Throws keel::Error(kInternal) describing the first violated invariant.
  void check_invariants() const;

  // Memory accounting.
  static size_t bytes_per_token(const KvLayout& layout, tensor::DType k_type,
                                tensor::DType v_type);
  size_t pool_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::kv
