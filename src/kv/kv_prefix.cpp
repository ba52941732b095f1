// KvCache: the prefix cache (register, look up, attach) and LRU eviction.
#include <algorithm>
#include <string>

#include "core/error.h"
#include "kv/kv_state.h"

namespace keel::kv {

void KvCache::Impl::evict_node(int32_t id) {
  PrefixNode& n = index.node(id);
  for (int32_t g = 0; g < n_groups(); ++g) {
    if (n.pages[g] != kNoPage) pools[g].release(n.pages[g]);
    n.pages[g] = kNoPage;
  }
  index.remove_leaf(id);
  ++evicted_nodes;
}

void KvCache::Impl::ensure_free(int32_t g, int64_t n_free, const char* op) {
  while (pools[g].free_count() < n_free) {
    // A sliding group first drops its pages from cached prefixes (the full-attention part
    // stays reusable); a full group evicts whole cached pages, oldest leaf first.
    int32_t victim = spec(g).sliding() ? index.lru_holding(g) : -1;
    if (victim >= 0) {
      pools[g].release(index.node(victim).pages[g]);
      index.node(victim).pages[g] = kNoPage;
      continue;
    }
    victim = index.lru_leaf();
    if (victim < 0) {
      throw Error(ErrorCode::kOutOfMemory,
                  std::string("kv ") + op + ": layer group " + std::to_string(g) +
                      " (window " + std::to_string(spec(g).window) + ") needs " +
                      std::to_string(n_free) + " free pages of " +
                      std::to_string(pools[g].capacity()) + ", " +
                      std::to_string(pools[g].free_count()) +
                      " free and nothing cached left to evict (raise max_tokens or use a "
                      "smaller KV type)");
    }
    evict_node(victim);
  }
}

namespace {

// True when `node` holds a page in every group where seq holds page i.
bool holds_as_much(const KvCache::Impl& m, const PrefixNode& node, const Sequence& s, int64_t i) {
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    if (node.pages[g] == kNoPage && s.pages[g][i] != kNoPage) return false;
  }
  return true;
}

}  // namespace

void KvCache::cache_prefix(SeqId seq, std::span<const TokenId> tokens) {
  Impl& m = *impl_;
  const Sequence& s = m.live_seq(seq, "cache_prefix");
  m.check_no_reservation(seq, s, "cache_prefix");
  if (static_cast<int64_t>(tokens.size()) > s.length) {
    throw Error(ErrorCode::kInvalidArgument,
                "kv cache_prefix: " + seq_name(seq) + ": " + std::to_string(tokens.size()) +
                    " tokens but only " + std::to_string(s.length) + " positions computed");
  }
  const int64_t n = std::min<int64_t>(static_cast<int64_t>(tokens.size()), s.clean_until);
  const int64_t P = m.page_tokens();
  int32_t at = PrefixIndex::kRoot;
  for (int64_t i = 0; i * P < n; ++i) {
    const auto block = tokens.subspan(i * P, std::min(P, n - i * P));
    int32_t node = m.index.find_exact(at, block);
    const int32_t longer = node < 0 ? m.index.find_extending(at, block) : -1;
    if (longer >= 0 && holds_as_much(m, m.index.node(longer), s, i)) {
      m.index.touch(longer);
      return;  // a longer cached page already covers this (partial) block
    }
    if (node >= 0) {
      // Same tokens: same K/V (kernels are batch invariant); fill in sliding pages the
      // node lacks so more attach points become usable.
      PrefixNode& nd = m.index.node(node);
      for (int32_t g = 0; g < m.n_groups(); ++g) {
        const PageId p = s.pages[g][i];
        if (nd.pages[g] == kNoPage && p != kNoPage) {
          m.pools[g].retain(p);
          nd.pages[g] = p;
        }
      }
      m.index.touch(node);
    } else {
      std::vector<PageId> pages(m.n_groups(), kNoPage);
      for (int32_t g = 0; g < m.n_groups(); ++g) {
        pages[g] = s.pages[g][i];
        if (pages[g] != kNoPage) m.pools[g].retain(pages[g]);
      }
      const int32_t shorter = m.index.find_extendable_leaf(at, block);
      if (shorter >= 0) m.evict_node(shorter);  // superseded by this longer page
      node = m.index.add_child(at, block, std::move(pages));
    }
    at = node;
  }
}

namespace {

// Longest usable prefix along a walk: full groups hold every node's page; a sliding group
// must hold the pages covering need_from(m) .. m-1.
PrefixMatch match_along(const KvCache::Impl& m, const std::vector<PrefixIndex::Step>& path) {
  const int64_t P = m.page_tokens();
  PrefixMatch r;
  // Per group: depth where the current unbroken run of held pages starts.
  std::vector<int64_t> run_start(m.n_groups(), 0);
  for (size_t d = 0; d < path.size(); ++d) {
    const PrefixNode& n = m.index.node(path[d].node);
    const int64_t end = static_cast<int64_t>(d) * P + path[d].n_matched;
    bool ok = true;
    for (int32_t g = 0; g < m.n_groups(); ++g) {
      if (n.pages[g] == kNoPage) {
        run_start[g] = static_cast<int64_t>(d) + 1;
        ok = false;
      } else if (run_start[g] * P > need_from(m.spec(g).window, end)) {
        ok = false;
      }
    }
    r.n_full_tokens = end;
    if (ok) r.n_tokens = end;
  }
  return r;
}

}  // namespace

PrefixMatch KvCache::lookup_prefix(std::span<const TokenId> tokens) const {
  return match_along(*impl_, impl_->index.walk(tokens));
}

SeqId KvCache::attach_prefix(std::span<const TokenId> tokens, int64_t n) {
  Impl& m = *impl_;
  if (n < 0 || n > static_cast<int64_t>(tokens.size())) {
    throw Error(ErrorCode::kInvalidArgument, "kv attach_prefix: " + std::to_string(n) +
                                                 " tokens requested of " +
                                                 std::to_string(tokens.size()) + " given");
  }
  // Usability is not monotone in n for sliding groups (a shorter prefix may need window
  // pages a longer one does not), so the prefix attached is the longest usable one of
  // tokens[0, n).
  const auto path = m.index.walk(tokens.first(static_cast<size_t>(n)));
  n = match_along(m, path).n_tokens;
  const SeqId id = m.free_slot("attach_prefix");
  const int64_t n_pages = pages_for(n, m.page_tokens());
  Sequence& s = m.seqs[id];
  s = Sequence{};
  s.live = true;
  s.length = n;
  s.pages.assign(m.n_groups(), std::vector<PageId>(n_pages, kNoPage));
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    // Sliding groups take only the unbroken run of held pages ending at the last page.
    for (int64_t i = n_pages - 1; i >= 0; --i) {
      const PageId p = m.index.node(path[i].node).pages[g];
      if (p == kNoPage) break;
      m.pools[g].retain(p);
      s.pages[g][i] = p;
    }
    m.trim_table(g, s, n_pages);
  }
  if (n_pages > 0) m.index.touch(path[n_pages - 1].node);
  return id;
}

int64_t KvCache::evict_prefixes(int64_t n_nodes) {
  int64_t done = 0;
  while (done < n_nodes) {
    const int32_t victim = impl_->index.lru_leaf();
    if (victim < 0) break;
    impl_->evict_node(victim);
    ++done;
  }
  return done;
}

}  // namespace keel::kv
