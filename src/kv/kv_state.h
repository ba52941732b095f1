// KvCache::Impl — the cache's state, shared by the .cpp files that implement its
// operations (kv_cache.cpp: sequences and writes; kv_edit.cpp: fork/truncate/shift;
// kv_prefix.cpp: prefix cache and eviction; kv_check.cpp: invariants). Private to src/kv.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kv/kv_cache.h"
#include "tensor/q8_tile.h"
#include "kv/layer_groups.h"
#include "kv/page_pool.h"
#include "kv/prefix_index.h"

namespace keel::kv {

struct Sequence {
  bool live = false;
  int64_t length = 0;    // committed positions
  int64_t reserved = 0;  // writable positions [length, length + reserved)
  // Positions [0, clean_until) hold K/V computed from exactly the tokens before them;
  // a context shift ends that (later rows depend on discarded tokens), so only the clean
  // part may enter the prefix index.
  int64_t clean_until = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<PageId>> pages;  // [group][page index], kNoPage = not held
};

struct KvCache::Impl {
  Impl(const KvLayout& layout, const KvOptions& options);

  KvLayout layout;
  KvOptions options;
  GroupLayout groups;
  std::vector<PagePool> pools;  // [group]
  std::vector<Sequence> seqs;   // [max_sequences]
  PrefixIndex index;
  int64_t evicted_nodes = 0;
  int64_t copied_pages = 0;

  int32_t n_groups() const { return static_cast<int32_t>(groups.groups.size()); }
  int32_t page_tokens() const { return options.page_tokens; }
  const GroupSpec& spec(int32_t g) const { return groups.groups[g]; }

  // Argument checks; throw kInvalidArgument naming the sequence / layer.
  Sequence& live_seq(SeqId seq, const char* op);
  const Sequence& live_seq(SeqId seq, const char* op) const;
  void check_layer(int32_t layer, const char* op) const;
  void check_no_reservation(SeqId seq, const Sequence& s, const char* op) const;
  SeqId free_slot(const char* op) const;

  // First held page index of a group's table (table size when none is held).
  static int64_t first_held_page(const std::vector<PageId>& table);
  // Longest prefix of seq (<= n) every group can serve from the pages it holds: n, or 0.
  int64_t servable_length(const Sequence& s, int64_t n) const;

  // Frees pages of group g (evicting cached prefixes, least recently used first) until
  // `n_free` are free. Throws kOutOfMemory when eviction cannot get there.
  void ensure_free(int32_t g, int64_t n_free, const char* op);
  void evict_node(int32_t node);

  // Releases pages of group g's table with index >= n_pages, and sliding pages wholly
  // below keep_from(length).
  void trim_table(int32_t g, Sequence& s, int64_t n_pages);
  void release_all(Sequence& s);

  // K and V of a page's layer slice, in rows of the cache type or in q8_0 tiles per kv
  // head (KvLayerView::k_tiles / v_pairs). Rows are f32 [n_kv_heads * head_dim] in and out.
  enum class Side { kK, kV };
  uint8_t* slice(Side side, int32_t g, PageId page, int32_t local_layer);
  const uint8_t* slice(Side side, int32_t g, PageId page, int32_t local_layer) const;
  bool tiled(Side side) const;
  tensor::q8_tile::Shape tile_shape(Side side) const;
  void store_row(Side side, int32_t g, PageId page, int32_t local_layer, int64_t pos, const float* row);
  void load_row(Side side, int32_t g, PageId page, int32_t local_layer, int64_t pos, float* row) const;
  void copy_row(Side side, int32_t g, int32_t local_layer, PageId dst, int64_t dst_pos, PageId src,
                int64_t src_pos);
};

std::string seq_name(SeqId seq);

}  // namespace keel::kv
