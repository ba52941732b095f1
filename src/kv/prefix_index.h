// PrefixIndex — a radix tree over token ids whose edges are pages: the node at depth d
// holds the tokens of positions [d*page_tokens, d*page_tokens + tokens.size()) and, per
// layer group, the page holding their K/V (kNoPage where a sliding group does not hold
// it). A path from the root spells a prefix; its pages are that prefix's page chain.
//
// Contract: the tree stores page ids only; reference counting is the owner's (KvCache)
// job — every page id stored here is one reference the owner took. Nodes with fewer than
// page_tokens tokens are leaves. Node 0 is the root (no tokens, no pages). Node ids are
// stable until the node is removed; removed ids are reused. Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/page_pool.h"

namespace keel::kv {

using TokenId = int32_t;

struct PrefixNode {
  std::vector<TokenId> tokens;  // 1..page_tokens ids
  std::vector<PageId> pages;    // [n_groups]
  int32_t parent = -1;
  int32_t depth = -1;           // page index; root -1
  std::vector<int32_t> children;
  uint64_t last_used = 0;
  bool live = false;
};

class PrefixIndex {
 public:
  PrefixIndex(int32_t page_tokens, int32_t n_groups);

  static constexpr int32_t kRoot = 0;

  // One matched node per page along `tokens`: node id and how many of its tokens match.
  struct Step {
    int32_t node;
    int64_t n_matched;
  };
  // The deepest path matching a prefix of tokens (ties: the child holding more pages).
  std::vector<Step> walk(std::span<const TokenId> tokens) const;

  // Child of `parent` whose tokens equal `block` exactly, or -1.
  int32_t find_exact(int32_t parent, std::span<const TokenId> block) const;
  // Child of `parent` whose tokens start with `block` (longer), or -1.
  int32_t find_extending(int32_t parent, std::span<const TokenId> block) const;
  // Leaf child of `parent` whose tokens are a strict prefix of `block`, or -1.
  int32_t find_extendable_leaf(int32_t parent, std::span<const TokenId> block) const;

  int32_t add_child(int32_t parent, std::span<const TokenId> block, std::vector<PageId> pages);
  // Removes a leaf (the caller released its pages first).
  void remove_leaf(int32_t node);
  // Marks node and its ancestors used now.
  void touch(int32_t node);

  // Least-recently-used leaf, or -1 when the tree is empty.
  int32_t lru_leaf() const;
  // Least-recently-used node holding a page of `group`, or -1.
  int32_t lru_holding(int32_t group) const;

  PrefixNode& node(int32_t id) { return nodes_[id]; }
  const PrefixNode& node(int32_t id) const { return nodes_[id]; }
  int32_t node_capacity() const { return static_cast<int32_t>(nodes_.size()); }
  int64_t size() const;  // live nodes, root excluded
  int32_t page_tokens() const { return page_tokens_; }

 private:
  int32_t page_tokens_;
  int32_t n_groups_;
  uint64_t clock_ = 0;
  std::vector<PrefixNode> nodes_;
  std::vector<int32_t> free_ids_;
};

}  // namespace keel::kv
