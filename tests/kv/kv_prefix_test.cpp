// Prefix cache: register, look up, attach, evict (LRU), sliding-window reuse rules.
#include <gtest/gtest.h>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv_test_util.h"

namespace keel::kv::test {
namespace {

using tensor::DType;

KvOptions opts(int32_t page, int64_t max_tokens) {
  KvOptions o = test_options(DType::kQ8_0, DType::kQ4_0, page, max_tokens);
  o.max_batch_tokens = 32;
  return o;
}

// Rows of a position depend on the tokens up to it (as a real forward pass's do).
uint64_t prefix_key(const std::vector<TokenId>& t, int64_t p) {
  uint64_t h = 1;
  for (int64_t i = 0; i <= p; ++i) h = mix(h * 31 + static_cast<uint64_t>(t[i]));
  return h;
}

// A sequence computed for `tokens` (fresh or continuing from its current length).
void feed(KvCache& c, SeqId s, const std::vector<TokenId>& tokens) {
  const int64_t len = c.length(s);
  const int64_t n = static_cast<int64_t>(tokens.size()) - len;
  c.reserve(s, n);
  for (int64_t p = len; p < len + n; ++p) {
    for (int32_t l = 0; l < c.layout().n_layers(); ++l) {
      c.write_k(s, l, p, make_row(prefix_key(tokens, p), l, false).data());
      c.write_v(s, l, p, make_row(prefix_key(tokens, p), l, true).data());
    }
  }
  c.commit(s, n);
}

void expect_computed_for(const KvCache& c, SeqId s, const std::vector<TokenId>& tokens) {
  for (int32_t l = 0; l < c.layout().n_layers(); ++l) {
    const KvLayerView v = c.view(s, l);
    for (int64_t p = v.first_held; p < c.length(s); ++p) {
      ASSERT_TRUE(same_bits(view_row(v, p, false),
                            stored(DType::kQ8_0, make_row(prefix_key(tokens, p), l, false))))
          << "layer " << l << " pos " << p;
      ASSERT_TRUE(same_bits(view_row(v, p, true),
                            stored(DType::kQ4_0, make_row(prefix_key(tokens, p), l, true))));
    }
  }
}

std::vector<TokenId> seq_tokens(int n, int salt, int diverge_at = -1) {
  std::vector<TokenId> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 7 + 3) % 50 + (i >= diverge_at && diverge_at >= 0 ? salt : 0);
  return t;
}

TEST(KvPrefix, AttachSharesCachedPagesWithoutCopying) {
  KvCache c(make_layout({0, 0}), opts(4, 256));
  const auto t = seq_tokens(10, 0);
  const SeqId a = c.create();
  feed(c, a, t);
  c.cache_prefix(a, t);
  c.release(a);  // finished: its pages stay cached
  c.check_invariants();
  EXPECT_EQ(c.usage().pages_used[0], 3);
  EXPECT_EQ(c.lookup_prefix(t).n_tokens, 10);
  const auto u = seq_tokens(12, 100, 7);  // shares 7 tokens, then diverges
  EXPECT_EQ(c.lookup_prefix(u).n_tokens, 7);
  EXPECT_EQ(c.lookup_prefix(seq_tokens(5, 100, 0)).n_tokens, 0);
  const SeqId b = c.attach_prefix(u, 7);
  EXPECT_EQ(c.length(b), 7);
  EXPECT_EQ(c.usage().pages_used[0], 3);  // shared, not copied
  c.check_invariants();
  expect_computed_for(c, b, u);
  feed(c, b, u);  // continues inside page 1: copy on write, the cached page stays intact
  EXPECT_EQ(c.usage().copied_pages, 1);
  c.check_invariants();
  expect_computed_for(c, b, u);
  const SeqId a2 = c.attach_prefix(t, 10);
  expect_computed_for(c, a2, t);
  // Asking for more than is cached attaches what is cached.
  const SeqId b2 = c.attach_prefix(u, 9);
  EXPECT_EQ(c.length(b2), 7);
  EXPECT_THROW(c.attach_prefix(u, 13), Error);
}

TEST(KvPrefix, LongerPrefixesSupersedePartialPages) {
  KvCache c(make_layout({0}), opts(4, 256));
  const auto t = seq_tokens(14, 0);
  const SeqId a = c.create();
  feed(c, a, std::vector<TokenId>(t.begin(), t.begin() + 6));
  c.cache_prefix(a, std::vector<TokenId>(t.begin(), t.begin() + 6));
  EXPECT_EQ(c.usage().prefix_nodes, 2);
  feed(c, a, t);
  c.cache_prefix(a, t);  // page 1 now complete: the partial node is replaced
  EXPECT_EQ(c.usage().prefix_nodes, 4);
  c.check_invariants();
  EXPECT_EQ(c.lookup_prefix(t).n_tokens, 14);
  c.release(a);
  const SeqId b = c.attach_prefix(t, 13);
  expect_computed_for(c, b, t);
  c.check_invariants();
}

TEST(KvPrefix, EvictionIsLeastRecentlyUsedAndSparesLivePages) {
  // 20 tokens + 4 sequences = 9 pages of 4.
  KvCache c(make_layout({0}), opts(4, 20));
  const auto t1 = seq_tokens(8, 1, 0), t2 = seq_tokens(8, 2, 0), t3 = seq_tokens(8, 3, 0);
  for (const auto* t : {&t1, &t2}) {
    const SeqId s = c.create();
    feed(c, s, *t);
    c.cache_prefix(s, *t);
    c.release(s);
  }
  // t1 used more recently than t2.
  c.release(c.attach_prefix(t1, 8));
  const SeqId live = c.create();
  feed(c, live, t3);  // 9 - 4 cached = 5 free: fits
  c.cache_prefix(live, t3);
  c.check_invariants();
  const SeqId big = c.create();
  c.reserve(big, 20);  // 5 pages, 3 free: t2's two cached pages are evicted first
  c.check_invariants();
  EXPECT_EQ(c.lookup_prefix(t2).n_tokens, 0);
  EXPECT_EQ(c.lookup_prefix(t1).n_tokens, 8);
  EXPECT_EQ(c.usage().evicted_nodes, 2);
  c.rollback(big);
  // Evicting everything frees only pages no sequence uses.
  EXPECT_EQ(c.evict_prefixes(100), 4);
  EXPECT_EQ(c.usage().prefix_nodes, 0);
  EXPECT_EQ(c.usage().pages_used[0], 2);  // live's own pages
  expect_computed_for(c, live, t3);
  c.check_invariants();
  // Nothing left to evict: a too-large reservation fails cleanly.
  EXPECT_THROW(c.reserve(big, 40), Error);
  c.check_invariants();
}

TEST(KvPrefix, SlidingWindowReuseOnlyWhereTheWindowIsHeld) {
  // Window 8, page 4, slack 4: a 40-token sequence holds sliding positions [28, 40).
  KvCache c(make_layout({0, 8}), opts(4, 256));
  const auto t = seq_tokens(40, 0);
  const SeqId a = c.create();
  for (int n = 4; n <= 40; n += 4) feed(c, a, std::vector<TokenId>(t.begin(), t.begin() + n));
  c.cache_prefix(a, t);
  c.release(a);
  c.check_invariants();
  PrefixMatch m = c.lookup_prefix(t);
  EXPECT_EQ(m.n_tokens, 40);
  // Diverging at 20: the full-attention pages match 20 tokens, but the window [12, 20)
  // was released, so nothing is reusable (recompute, never silently wrong).
  const auto u = seq_tokens(30, 9, 20);
  m = c.lookup_prefix(u);
  EXPECT_EQ(m.n_full_tokens, 20);
  EXPECT_EQ(m.n_tokens, 0);
  // Diverging at 37: window [29, 37) is held.
  const auto w = seq_tokens(45, 9, 37);
  EXPECT_EQ(c.lookup_prefix(w).n_tokens, 37);
  const SeqId b = c.attach_prefix(w, 37);
  EXPECT_EQ(c.view(b, 1).first_held, 28);
  // A shorter prefix of the same tokens needs window pages that are gone.
  const SeqId none = c.attach_prefix(w, 30);
  EXPECT_EQ(c.length(none), 0);
  c.release(none);
  c.check_invariants();
  expect_computed_for(c, b, w);
  feed(c, b, w);
  expect_computed_for(c, b, w);
  c.check_invariants();
  // A short prefix (inside the first window) is reusable when its pages were cached.
  const auto s = seq_tokens(6, 0);
  const SeqId d = c.create();
  feed(c, d, s);
  c.cache_prefix(d, s);
  EXPECT_EQ(c.lookup_prefix(seq_tokens(9, 5, 6)).n_tokens, 6);
}

TEST(KvPrefix, ShiftedPositionsAreNotRegistered) {
  KvCache c(make_layout({0}), opts(4, 256));
  auto t = seq_tokens(20, 0);
  const SeqId a = c.create();
  feed(c, a, t);
  c.shift(a, 4, 6, test_rotate);
  t.erase(t.begin() + 4, t.begin() + 10);
  c.cache_prefix(a, t);  // only the 4 positions before the shift are registered
  EXPECT_EQ(c.lookup_prefix(t).n_tokens, 4);
  EXPECT_THROW(c.cache_prefix(a, seq_tokens(15, 0)), Error);
  c.check_invariants();
}

}  // namespace
}  // namespace keel::kv::test
