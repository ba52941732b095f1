// KvCache::check_invariants — the cache's bookkeeping, verified from scratch.
#include <string>
#include <vector>

#include "core/error.h"
#include "kv/kv_state.h"

namespace keel::kv {
namespace {

[[noreturn]] void violated(const std::string& what) {
  throw Error(ErrorCode::kInternal, "kv invariant violated: " + what);
}

std::string where(SeqId seq, int32_t g, const GroupSpec& sp) {
  return seq_name(seq) + ", group " + std::to_string(g) + " (window " + std::to_string(sp.window) +
         ")";
}

std::string range(int64_t a, int64_t b) {
  return "positions [" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

void check_sequence(const KvCache::Impl& m, SeqId id, const Sequence& s,
                    std::vector<std::vector<int32_t>>& refs) {
  const int32_t P = m.page_tokens();
  if (!s.live) {
    for (const auto& t : s.pages) {
      if (!t.empty()) violated(seq_name(id) + " is released but still holds pages");
    }
    return;
  }
  if (s.length < 0 || s.reserved < 0) {
    violated(seq_name(id) + " has length " + std::to_string(s.length) + ", reserved " +
             std::to_string(s.reserved));
  }
  if (static_cast<int32_t>(s.pages.size()) != m.n_groups()) {
    violated(seq_name(id) + " has page tables for " + std::to_string(s.pages.size()) +
             " groups, expected " + std::to_string(m.n_groups()));
  }
  const int64_t end = s.length + s.reserved;
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    const GroupSpec& sp = m.spec(g);
    const auto& t = s.pages[g];
    if (static_cast<int64_t>(t.size()) != pages_for(end, P)) {
      violated(where(id, g, sp) + ": page table covers " + range(0, int64_t(t.size()) * P) +
               " but the sequence has " + range(0, end) + " (length " +
               std::to_string(s.length) + ")");
    }
    const int64_t first = KvCache::Impl::first_held_page(t);
    for (size_t i = first; i < t.size(); ++i) {
      if (t[i] == kNoPage) {
        violated(where(id, g, sp) + ": " + range(int64_t(i) * P, int64_t(i + 1) * P) +
                 " not held although " + range(first * P, end) + " should be contiguous");
      }
    }
    if (end > 0 && first * P > need_from(sp.window, s.length)) {
      violated(where(id, g, sp) + ": holds from position " + std::to_string(first * P) +
               " but length " + std::to_string(s.length) + " needs " +
               range(need_from(sp.window, s.length), s.length) + " (a query would see no key)");
    }
    for (PageId p : t) {
      if (p == kNoPage) continue;
      if (p < 0 || p >= m.pools[g].capacity()) {
        violated(where(id, g, sp) + ": invalid page id " + std::to_string(p));
      }
      ++refs[g][p];
    }
    if (s.reserved > 0) {
      for (int64_t i = s.length / P; i < static_cast<int64_t>(t.size()); ++i) {
        if (m.pools[g].refcount(t[i]) != 1) {
          violated(where(id, g, sp) + ": reserved " + range(s.length, end) +
                   " lie in shared page " + std::to_string(t[i]));
        }
      }
    }
  }
}

void check_index(const KvCache::Impl& m, std::vector<std::vector<int32_t>>& refs) {
  const PrefixIndex& ix = m.index;
  for (int32_t id = 1; id < ix.node_capacity(); ++id) {
    const PrefixNode& n = ix.node(id);
    if (!n.live) continue;
    const std::string name = "prefix node " + std::to_string(id) + " (" +
                             range(int64_t(n.depth) * m.page_tokens(),
                                   int64_t(n.depth) * m.page_tokens() + int64_t(n.tokens.size())) +
                             ")";
    if (n.tokens.empty() || n.tokens.size() > static_cast<size_t>(m.page_tokens())) {
      violated(name + " holds " + std::to_string(n.tokens.size()) + " tokens");
    }
    if (n.tokens.size() < static_cast<size_t>(m.page_tokens()) && !n.children.empty()) {
      violated(name + " is a partial page with children");
    }
    const PrefixNode& parent = ix.node(n.parent);
    if (!parent.live || parent.depth + 1 != n.depth) violated(name + " has a broken parent link");
    for (int32_t g = 0; g < m.n_groups(); ++g) {
      const PageId p = n.pages[g];
      if (p == kNoPage) {
        if (!m.spec(g).sliding()) violated(name + " lacks its full-attention page in group " +
                                           std::to_string(g));
        continue;
      }
      if (p < 0 || p >= m.pools[g].capacity()) violated(name + ": invalid page " + std::to_string(p));
      ++refs[g][p];
    }
  }
}

}  // namespace

void KvCache::check_invariants() const {
  const Impl& m = *impl_;
  std::vector<std::vector<int32_t>> refs(m.n_groups());
  for (int32_t g = 0; g < m.n_groups(); ++g) refs[g].assign(m.pools[g].capacity(), 0);
  for (size_t i = 0; i < m.seqs.size(); ++i) {
    check_sequence(m, static_cast<SeqId>(i), m.seqs[i], refs);
  }
  check_index(m, refs);
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    const PagePool& pool = m.pools[g];
    int64_t used = 0;
    for (PageId p = 0; p < pool.capacity(); ++p) {
      if (pool.refcount(p) != refs[g][p]) {
        violated("group " + std::to_string(g) + ": page " + std::to_string(p) +
                 " has reference count " + std::to_string(pool.refcount(p)) + " but " +
                 std::to_string(refs[g][p]) + " references from page tables and the prefix index" +
                 (pool.refcount(p) == 0 ? " (free and referenced)" : ""));
      }
      used += refs[g][p] > 0 ? 1 : 0;
    }
    if (used != pool.used_count() || used + pool.free_count() != pool.capacity()) {
      violated("group " + std::to_string(g) + ": " + std::to_string(used) + " pages referenced, " +
               std::to_string(pool.used_count()) + " accounted used, " +
               std::to_string(pool.free_count()) + " free of " + std::to_string(pool.capacity()));
    }
  }
}

}  // namespace keel::kv
