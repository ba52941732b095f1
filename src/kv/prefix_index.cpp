#include "kv/prefix_index.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace keel::kv {
namespace {

int64_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

int held_pages(const PrefixNode& n) {
  return static_cast<int>(std::count_if(n.pages.begin(), n.pages.end(),
                                        [](PageId p) { return p != kNoPage; }));
}

}  // namespace

PrefixIndex::PrefixIndex(int32_t page_tokens, int32_t n_groups)
    : page_tokens_(page_tokens), n_groups_(n_groups) {
  PrefixNode root;
  root.live = true;
  root.pages.assign(n_groups, kNoPage);
  nodes_.push_back(std::move(root));
}

std::vector<PrefixIndex::Step> PrefixIndex::walk(std::span<const TokenId> tokens) const {
  std::vector<Step> path;
  int32_t at = kRoot;
  size_t pos = 0;
  while (pos < tokens.size()) {
    const auto block = tokens.subspan(pos, std::min<size_t>(page_tokens_, tokens.size() - pos));
    int32_t best = -1;
    int64_t best_len = 0;
    for (int32_t c : nodes_[at].children) {
      const int64_t len = common_prefix(block, nodes_[c].tokens);
      if (len > best_len || (len == best_len && len > 0 && held_pages(nodes_[c]) > held_pages(nodes_[best]))) {
        best = c;
        best_len = len;
      }
    }
    if (best < 0) break;
    path.push_back({best, best_len});
    if (best_len < page_tokens_) break;
    at = best;
    pos += page_tokens_;
  }
  return path;
}

int32_t PrefixIndex::find_exact(int32_t parent, std::span<const TokenId> block) const {
  for (int32_t c : nodes_[parent].children) {
    const auto& t = nodes_[c].tokens;
    if (t.size() == block.size() && std::equal(t.begin(), t.end(), block.begin())) return c;
  }
  return -1;
}

int32_t PrefixIndex::find_extending(int32_t parent, std::span<const TokenId> block) const {
  for (int32_t c : nodes_[parent].children) {
    const auto& t = nodes_[c].tokens;
    if (t.size() > block.size() && std::equal(block.begin(), block.end(), t.begin())) return c;
  }
  return -1;
}

int32_t PrefixIndex::find_extendable_leaf(int32_t parent, std::span<const TokenId> block) const {
  for (int32_t c : nodes_[parent].children) {
    const auto& t = nodes_[c].tokens;
    if (nodes_[c].children.empty() && t.size() < block.size() &&
        std::equal(t.begin(), t.end(), block.begin())) {
      return c;
    }
  }
  return -1;
}

int32_t PrefixIndex::add_child(int32_t parent, std::span<const TokenId> block,
                               std::vector<PageId> pages) {
  if (block.empty() || block.size() > static_cast<size_t>(page_tokens_) ||
      pages.size() != static_cast<size_t>(n_groups_) ||
      nodes_[parent].tokens.size() < static_cast<size_t>(parent == kRoot ? 0 : page_tokens_)) {
    throw Error(ErrorCode::kInternal, "prefix index: malformed node under node " +
                                          std::to_string(parent));
  }
  int32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  PrefixNode& n = nodes_[id];
  n.tokens.assign(block.begin(), block.end());
  n.pages = std::move(pages);
  n.parent = parent;
  n.depth = nodes_[parent].depth + 1;
  n.children.clear();
  n.live = true;
  nodes_[parent].children.push_back(id);
  touch(id);
  return id;
}

void PrefixIndex::remove_leaf(int32_t id) {
  PrefixNode& n = nodes_[id];
  if (id == kRoot || !n.live || !n.children.empty()) {
    throw Error(ErrorCode::kInternal, "prefix index: node " + std::to_string(id) +
                                          " is not a removable leaf");
  }
  auto& siblings = nodes_[n.parent].children;
  siblings.erase(std::find(siblings.begin(), siblings.end(), id));
  n = PrefixNode{};
  free_ids_.push_back(id);
}

void PrefixIndex::touch(int32_t id) {
  const uint64_t now = ++clock_;
  for (int32_t at = id; at > kRoot; at = nodes_[at].parent) nodes_[at].last_used = now;
}

int32_t PrefixIndex::lru_leaf() const {
  int32_t best = -1;
  for (int32_t i = 1; i < node_capacity(); ++i) {
    const PrefixNode& n = nodes_[i];
    if (!n.live || !n.children.empty()) continue;
    if (best < 0 || n.last_used < nodes_[best].last_used) best = i;
  }
  return best;
}

int32_t PrefixIndex::lru_holding(int32_t group) const {
  int32_t best = -1;
  for (int32_t i = 1; i < node_capacity(); ++i) {
    const PrefixNode& n = nodes_[i];
    if (!n.live || n.pages[group] == kNoPage) continue;
    if (best < 0 || n.last_used < nodes_[best].last_used) best = i;
  }
  return best;
}

int64_t PrefixIndex::size() const {
  int64_t n = 0;
  for (int32_t i = 1; i < node_capacity(); ++i) n += nodes_[i].live ? 1 : 0;
  return n;
}

}  // namespace keel::kv
