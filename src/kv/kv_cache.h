// KvCache — the paged key/value cache. It knows no architecture: the model describes its
// layers (KvLayout) and the cache stores, per layer group, pages of K and V rows in the
// chosen types. One source of truth for positions: a sequence's length lives here only.
//
// Contract (see docs/ARCHITECTURE.md §KV):
//  - Pages hold `page_tokens` consecutive positions of every layer of one group (K and V).
//    Layers with the same sliding window form one group; window 0 = full attention. Each
//    group has its own pool of pages; pages are reference-counted (sequences and the
//    prefix index share them; a shared page is copied before it is written).
//  - A sequence is a page table per group plus one length shared by all groups. Every
//    operation keeps every group consistent in one call (no group ever disagrees with
//    another about the length). A sliding group holds only the pages that intersect
//    [length - window - slack, length); full groups hold every page.
//  - Writing new positions: reserve(seq, n) makes positions [len, len+n) writable (pages
//    allocated, shared pages copied on write); write_k/v() fill rows layer by layer; then
//    commit(seq, n) makes them part of the sequence, or rollback(seq) discards them. A
//    failed forward pass therefore never leaves half-written positions visible. While a
//    sequence has a reservation, only write/view/commit/rollback/release apply to it.
//  - Every query at position p of a sequence sees at least its own key: attention views
//    always hold the keys (p - window, p] of every p < len (+ reserved during a forward
//    pass). Operations that cannot keep this (a sliding group lost the window) return a
//    shorter length instead; the caller recomputes the rest.
//  - Prefix cache: cache_prefix() registers a sequence's computed positions under their
//    token ids; lookup_prefix()/attach_prefix() let a new sequence share them without
//    copying. Cached pages stay until evicted least-recently-used, when a pool runs out
//    or on evict_prefixes().
//  - Thread-safety: not thread-safe; owned by the engine thread. Views are valid until the
//    next mutating call.
//  - Errors: bad sequence ids, out-of-range positions, an exhausted page pool → keel::Error
//    (kInvalidArgument / kOutOfMemory) naming the sequence and positions; the cache is
//    unchanged by a call that throws. Never aborts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "tensor/types.h"

namespace keel::kv {

using SeqId = int32_t;
using TokenId = int32_t;

// What the model tells the cache about its attention layers.
struct KvLayout {
  std::vector<int32_t> layer_window;  // per layer: 0 = full attention, else n_swa
  int64_t n_kv_heads = 0;             // same for every layer
  int64_t head_dim_k = 0;             // per head
  int64_t head_dim_v = 0;
  int32_t n_layers() const { return static_cast<int32_t>(layer_window.size()); }
};

struct KvOptions {
  // Any of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, chosen independently. Block
  // types need the head dimension to be a multiple of their block size (32).
  tensor::DType k_type = tensor::DType::kF16;
  tensor::DType v_type = tensor::DType::kF16;
  int32_t page_tokens = 32;
  int64_t max_tokens = 4096;  // capacity of the full-attention pool, in tokens (all seqs)
  int32_t max_sequences = 16;
  // Sliding groups keep this many positions below the window, so a truncate slightly
  // below the length can still be served without recomputation (a context shift moves
  // rows across pages: keep at least page_tokens for shifts to keep the window).
  int32_t window_slack_tokens = 32;
  // Most positions reserved (all sequences together) at once; sizes the sliding pools.
  int64_t max_batch_tokens = 512;
};

// Read-only view of one layer of one sequence, for attention kernels.
// Page i covers positions [i*page_tokens, (i+1)*page_tokens). Within a page, the K row of
// position p and kv-head h starts at k_pages[i] + (p % page_tokens) * k_token_stride +
// h * k_head_bytes, holding head_dim_k elements of k_type (same for V), except for q8_0
// stored as tiles (tensor/q8_tile.h), one per kv head of a page, at k_pages[i] +
// h * k_head_bytes (k_head_bytes = the tile's bytes; k_token_stride = 0):
//  - k_tiles (q8_0 K, page_tokens a multiple of 16): q8_tile::key_groups(page_tokens,
//    head_dim_k), 16 keys' codes interleaved by 4-byte groups, as the q8_0 scores read them;
//  - v_pairs (q8_0 V, page_tokens even): q8_tile::value_pairs(page_tokens, head_dim_v),
//    codes paired by key, as attention's integer p·v reads them.
// Either way the scales of a page's rows are one contiguous read.
struct KvLayerView {
  tensor::DType k_type, v_type;
  int64_t n_kv_heads = 0, head_dim_k = 0, head_dim_v = 0;
  int32_t page_tokens = 0;
  int32_t window = 0;          // 0 = full attention; else keys p - window < k <= p
  int64_t n_positions = 0;     // positions [0, n_positions) may be addressed
  int64_t first_held = 0;      // positions below this are not held (sliding window)
  size_t k_token_stride = 0, k_head_bytes = 0;
  size_t v_token_stride = 0, v_head_bytes = 0;
  bool k_tiles = false, v_pairs = false;
  std::vector<const uint8_t*> k_pages, v_pages;  // nullptr where not held
};

// Re-rotation of K rows for a context shift; supplied by the model (the cache knows no
// rope). Rotates `n_rows` rows of one layer (each n_kv_heads * head_dim_k floats) by
// `delta` positions (negative: towards the start).
using KRotator = std::function<void(int32_t layer, float* k_rows, int64_t n_rows, int64_t delta)>;

// Memory of one layer group: what a token costs and what its pool holds.
struct KvGroupPlan {
  int32_t window = 0;             // 0 = full attention
  std::vector<int32_t> layers;    // model layer indices in this group
  size_t bytes_per_token = 0;     // K + V of every layer of the group, one position
  size_t page_bytes = 0;          // page_tokens * bytes_per_token
  int64_t pages = 0;              // pool capacity
  size_t pool_bytes = 0;          // pages * page_bytes
};

struct KvMemoryPlan {
  std::vector<KvGroupPlan> groups;  // full-attention group first, then by window
  size_t bytes_per_token = 0;       // all layers (what a full-context token costs)
  size_t pool_bytes = 0;            // sum over groups
};

// Result of a prefix lookup: how many leading tokens can be attached.
struct PrefixMatch {
  int64_t n_tokens = 0;       // usable in every group (sliding windows held)
  int64_t n_full_tokens = 0;  // matched in the tree (what full-attention pages hold)
};

// Counters of page use, for metrics and tests.
struct KvUsage {
  std::vector<int64_t> pages_used;  // per group
  std::vector<int64_t> pages_total;
  int64_t prefix_nodes = 0;
  int64_t evicted_nodes = 0;        // since construction
  int64_t copied_pages = 0;         // copy-on-write copies since construction
};

class KvCache {
 public:
  // Throws keel::Error(kInvalidArgument / kUnsupported) for an invalid layout or options
  // (a type the cache cannot store, a head dimension not a multiple of a block type's
  // block size, non-positive sizes).
  KvCache(const KvLayout& layout, const KvOptions& options);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvLayout& layout() const;
  const KvOptions& options() const;

  SeqId create();
  void release(SeqId seq);
  int64_t length(SeqId seq) const;
  bool is_live(SeqId seq) const;
  std::vector<SeqId> live_sequences() const;

  void reserve(SeqId seq, int64_t n_new);
  int64_t reserved(SeqId seq) const;
  // Rows are f32 [n_kv_heads * head_dim]; converted to the cache type. pos must lie in
  // the reserved range [len, len + reserved).
  void write_k(SeqId seq, int32_t layer, int64_t pos, const float* row);
  void write_v(SeqId seq, int32_t layer, int64_t pos, const float* row);
  // Commits the first n_new reserved positions (n_new <= reserved); the rest of the
  // reservation is discarded.
  void commit(SeqId seq, int64_t n_new);
  void rollback(SeqId seq);

  KvLayerView view(SeqId seq, int32_t layer) const;
  // The same view written into *out, reusing the capacity of its page lists: a caller that
  // keeps its views across steps takes them without allocating (decode steps).
  void view(SeqId seq, int32_t layer, KvLayerView* out) const;
  // Row of one position dequantized to f32 [n_kv_heads * head_dim]; for tests and tools.
  void read_k(SeqId seq, int32_t layer, int64_t pos, float* row) const;
  void read_v(SeqId seq, int32_t layer, int64_t pos, float* row) const;

  // A new sequence sharing the first n positions of src (copy-on-write). Its length is n,
  // or 0 when a sliding group of src no longer holds the window position n needs.
  SeqId fork(SeqId src, int64_t n);
  // Drops positions [n, end). Returns the resulting length, which is n unless a sliding
  // group no longer holds the window that position n-1 needs; then it is the longest
  // prefix every group can serve (the caller recomputes the rest).
  int64_t truncate(SeqId seq, int64_t n);
  // Context shift: drops [n_keep, n_keep + n_discard), renumbers the rest, re-rotates K
  // by -n_discard (dequantize → rotate → requantize for block types). Returns the
  // resulting length (len - n_discard, or shorter like truncate when a sliding group
  // cannot serve the window of the renumbered positions).
  int64_t shift(SeqId seq, int64_t n_keep, int64_t n_discard, const KRotator& rotate);

  // Prefix cache. `tokens` are the ids at positions [0, tokens.size()).
  // Registers seq's first tokens.size() positions (<= length(seq)); positions after a
  // context shift are not registered (their K/V depend on discarded tokens).
  void cache_prefix(SeqId seq, std::span<const TokenId> tokens);
  // The longest prefix of `tokens` a new sequence can attach to.
  PrefixMatch lookup_prefix(std::span<const TokenId> tokens) const;
  // A new sequence sharing the cached pages of the longest usable prefix of tokens[0, n):
  // its length is lookup_prefix(tokens[0, n)).n_tokens, which is n for full-attention
  // models when n <= lookup_prefix(tokens).n_tokens, but may be less (even 0) for
  // sliding-window ones, whose shorter prefixes need window pages a longer one does not.
  // Read length() for the positions reused. Marks the prefix recently used.
  SeqId attach_prefix(std::span<const TokenId> tokens, int64_t n);
  // Evicts up to n_nodes least-recently-used cached pages (leaves of the index) and
  // returns how many were evicted; pages still used by sequences stay.
  int64_t evict_prefixes(int64_t n_nodes);

  // Throws keel::Error(kInternal) describing the first violated invariant: positions
  // held contiguously per group and covering every window, page tables sized to the
  // length, reference counts equal to references, no free page referenced, accounting.
  void check_invariants() const;

  // Memory accounting.
  static size_t bytes_per_token(const KvLayout& layout, tensor::DType k_type,
                                tensor::DType v_type);
  // The pools a cache with these options allocates (validates like the constructor).
  static KvMemoryPlan plan(const KvLayout& layout, const KvOptions& options);
  size_t pool_bytes() const;
  KvUsage usage() const;

  // Opaque state, defined in kv/kv_state.h (private to src/kv).
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::kv
