// Layer groups: how the cache splits a model's layers into page groups (one per distinct
// sliding window; window 0 = full attention, listed first) and the window arithmetic every
// operation shares. Pure functions of the layout and options; thread-safe.
//
// A page of a group has one slice per layer (PagePool: slice-major storage); the slice of
// layer l (its index inside the group) holds
//   [0, page_tokens * k_row_bytes)              K rows
//   [page_tokens * k_row_bytes, layer_bytes)    V rows
// with layer_bytes = page_tokens * (k_row_bytes + v_row_bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"

namespace keel::kv {

struct GroupSpec {
  int32_t window = 0;            // 0 = full attention
  std::vector<int32_t> layers;   // model layer ids
  size_t k_row_bytes = 0;        // one position, all kv heads
  size_t v_row_bytes = 0;
  size_t layer_bytes = 0;        // one layer's slice of a page
  size_t page_bytes = 0;         // layer_bytes * layers
  int64_t pages = 0;             // pool capacity

  bool sliding() const { return window > 0; }
};

struct LayerSlot {
  int32_t group = 0;  // index into the group list
  int32_t local = 0;  // index of the layer inside its group
};

struct GroupLayout {
  std::vector<GroupSpec> groups;
  std::vector<LayerSlot> layer_slot;  // per model layer
};

// Validates layout + options (throws keel::Error naming the bad field) and derives the
// groups, row sizes and pool capacities.
GroupLayout make_group_layout(const KvLayout& layout, const KvOptions& options);

// True for the types a cache page can hold.
bool is_cache_type(tensor::DType type);

// Window arithmetic for a group with window w (0 = full), in positions.
// First position that must be held for a sequence of length len: position len-1 sees
// keys (len-1-w, len-1].
inline int64_t need_from(int32_t w, int64_t len) {
  return w == 0 || len <= w ? 0 : len - w;
}
// First position kept after a commit (pages wholly below it are released).
inline int64_t keep_from(int32_t w, int32_t slack, int64_t len) {
  return w == 0 || len <= int64_t{w} + slack ? 0 : len - w - slack;
}
inline int64_t pages_for(int64_t n_positions, int32_t page_tokens) {
  return (n_positions + page_tokens - 1) / page_tokens;
}

}  // namespace keel::kv
