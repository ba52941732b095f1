// KvCache: fork, truncate and context shift — the operations that edit page tables.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "kv/kv_state.h"

namespace keel::kv {
namespace {

constexpr int64_t kAllClean = std::numeric_limits<int64_t>::max();

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// Positions below clean_until are clean; once that covers the whole sequence, later
// appends are clean too.
void normalize_clean(Sequence& s) {
  if (s.clean_until >= s.length) s.clean_until = kAllClean;
}

}  // namespace

SeqId KvCache::fork(SeqId src, int64_t n) {
  Impl& m = *impl_;
  const Sequence& s = m.live_seq(src, "fork");
  m.check_no_reservation(src, s, "fork");  // its last page may be half written
  if (n < 0 || n > s.length) {
    invalid("kv fork: " + seq_name(src) + ": fork point " + std::to_string(n) +
            " outside [0, " + std::to_string(s.length) + "]");
  }
  const SeqId id = m.free_slot("fork");
  const int64_t len = m.servable_length(s, n);
  const int64_t n_pages = pages_for(len, m.page_tokens());
  Sequence& d = m.seqs[id];  // seqs never reallocates: `s` stays valid
  d = Sequence{};
  d.live = true;
  d.length = len;
  d.clean_until = s.clean_until;
  d.pages.assign(m.n_groups(), {});
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    d.pages[g].assign(s.pages[g].begin(), s.pages[g].begin() + n_pages);
    for (PageId p : d.pages[g]) {
      if (p != kNoPage) m.pools[g].retain(p);
    }
    m.trim_table(g, d, n_pages);
  }
  normalize_clean(d);
  return id;
}

int64_t KvCache::truncate(SeqId seq, int64_t n) {
  Impl& m = *impl_;
  Sequence& s = m.live_seq(seq, "truncate");
  m.check_no_reservation(seq, s, "truncate");
  if (n < 0 || n > s.length) {
    invalid("kv truncate: " + seq_name(seq) + ": new length " + std::to_string(n) +
            " outside [0, " + std::to_string(s.length) + "]");
  }
  const int64_t len = m.servable_length(s, n);
  s.length = len;
  for (int32_t g = 0; g < m.n_groups(); ++g) m.trim_table(g, s, pages_for(len, m.page_tokens()));
  normalize_clean(s);
  return len;
}

// ---------------------------------------------------------------------------------------
// Context shift. New position q takes the row of old position src(q) = q < keep ? q :
// q + discard. Whole pages below `keep` move over unchanged; every other page of the new
// table is built row by row (K rotated for moved rows), and each old page is released as
// soon as the last new page reading it is built, so a full pool still has room.

namespace {

struct ShiftPlan {
  int64_t keep = 0, discard = 0, new_len = 0;
  int64_t first_page = 0;              // first held page of the new table
  int64_t n_pages = 0;                 // new table size
  std::vector<int64_t> last_reader;    // per old page: last new page reading it, or -1
  bool servable = true;

  int64_t src(int64_t q) const { return q < keep ? q : q + discard; }
  bool moved_whole(int64_t i, int32_t P) const { return (i + 1) * P <= keep; }
};

ShiftPlan plan_shift(const KvCache::Impl& m, const Sequence& s, int32_t g, int64_t keep,
                     int64_t discard) {
  const int32_t P = m.page_tokens();
  const int32_t w = m.spec(g).window;
  ShiftPlan p;
  p.keep = keep;
  p.discard = discard;
  p.new_len = s.length - discard;
  p.n_pages = pages_for(p.new_len, P);
  const int64_t fh = KvCache::Impl::first_held_page(s.pages[g]) * P;
  // Lowest new position from which every row's source is held.
  const int64_t start = fh - discard > keep ? fh - discard : std::min(fh, keep);
  p.first_page = std::max(pages_for(start, P), keep_from(w, m.options.window_slack_tokens,
                                                         p.new_len) / P);
  p.servable = p.new_len == 0 || p.first_page * P <= need_from(w, p.new_len);
  p.last_reader.assign(s.pages[g].size(), -1);
  for (int64_t i = p.first_page; i < p.n_pages; ++i) {
    if (p.moved_whole(i, P)) continue;
    const int64_t end = std::min<int64_t>((i + 1) * P, p.new_len);
    for (int64_t q = i * P; q < end; ++q) p.last_reader[p.src(q) / P] = i;
  }
  return p;
}

bool moves_over(const ShiftPlan& p, int64_t j, int32_t P) {
  return j >= p.first_page && j < p.n_pages && p.moved_whole(j, P);
}

// Free pages group g must have before the shift starts (allocations run ahead of the
// releases they enable by at most this much).
int64_t free_pages_needed(const KvCache::Impl& m, const Sequence& s, int32_t g,
                          const ShiftPlan& p) {
  const int32_t P = m.page_tokens();
  const auto& old = s.pages[g];
  auto frees = [&](int64_t j) { return old[j] != kNoPage && m.pools[g].refcount(old[j]) == 1; };
  int64_t balance = 0, need = 0;
  for (size_t j = 0; j < old.size(); ++j) {
    if (!moves_over(p, j, P) && p.last_reader[j] < 0 && frees(j)) ++balance;
  }
  for (int64_t i = p.first_page; i < p.n_pages; ++i) {
    if (p.moved_whole(i, P)) continue;
    --balance;
    need = std::max(need, -balance);
    for (size_t j = 0; j < old.size(); ++j) {
      if (p.last_reader[j] == i && frees(j)) ++balance;
    }
  }
  return need;
}

void shift_group(KvCache::Impl& m, Sequence& s, int32_t g, const ShiftPlan& p,
                 const KRotator& rotate) {
  const int32_t P = m.page_tokens();
  const GroupSpec& sp = m.spec(g);
  PagePool& pool = m.pools[g];
  auto& old = s.pages[g];
  std::vector<PageId> fresh(p.n_pages, kNoPage);
  auto release_old = [&](size_t j) {
    if (old[j] != kNoPage) pool.release(old[j]);
    old[j] = kNoPage;
  };
  for (size_t j = 0; j < old.size(); ++j) {
    if (moves_over(p, j, P)) {
      fresh[j] = old[j];
      old[j] = kNoPage;
    } else if (p.last_reader[j] < 0) {
      release_old(j);
    }
  }
  const int64_t k_elems = m.layout.n_kv_heads * m.layout.head_dim_k;
  std::vector<float> rows(static_cast<size_t>(P) * k_elems);  // [P][n_kv_heads*head_dim_k]
  try {
    for (int64_t i = p.first_page; i < p.n_pages; ++i) {
      if (p.moved_whole(i, P)) continue;
      fresh[i] = pool.allocate();
      const int64_t begin = i * P, end = std::min<int64_t>((i + 1) * P, p.new_len);
      for (int32_t l = 0; l < static_cast<int32_t>(sp.layers.size()); ++l) {
        int64_t n_moved = 0;
        for (int64_t q = begin; q < end; ++q) {
          const PageId from = old[p.src(q) / P];
          using Side = KvCache::Impl::Side;
          m.copy_row(Side::kV, g, l, fresh[i], q, from, p.src(q));
          if (q < p.keep) {
            m.copy_row(Side::kK, g, l, fresh[i], q, from, p.src(q));
          } else {
            m.load_row(Side::kK, g, from, l, p.src(q), rows.data() + n_moved++ * k_elems);
          }
        }
        if (n_moved == 0) continue;
        rotate(sp.layers[l], rows.data(), n_moved, -p.discard);
        for (int64_t r = 0; r < n_moved; ++r) {
          const int64_t q = end - n_moved + r;
          m.store_row(KvCache::Impl::Side::kK, g, fresh[i], l, q, rows.data() + r * k_elems);
        }
      }
      for (size_t j = 0; j < old.size(); ++j) {
        if (p.last_reader[j] == i) release_old(j);
      }
    }
  } catch (...) {
    for (size_t j = 0; j < old.size(); ++j) release_old(j);
    for (PageId f : fresh) {
      if (f != kNoPage) pool.release(f);
    }
    old.clear();
    throw;
  }
  old = std::move(fresh);
}

}  // namespace

int64_t KvCache::shift(SeqId seq, int64_t n_keep, int64_t n_discard, const KRotator& rotate) {
  Impl& m = *impl_;
  Sequence& s = m.live_seq(seq, "shift");
  m.check_no_reservation(seq, s, "shift");
  if (n_keep < 0 || n_discard < 0 || n_keep > s.length || n_discard > s.length - n_keep) {
    invalid("kv shift: " + seq_name(seq) + ": keep " + std::to_string(n_keep) + ", discard " +
            std::to_string(n_discard) + " do not fit length " + std::to_string(s.length));
  }
  if (n_discard == 0) return s.length;
  if (!rotate && s.length - n_discard > n_keep) {
    invalid("kv shift: " + seq_name(seq) + ": no K rotator given");
  }
  std::vector<ShiftPlan> plans;
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    plans.push_back(plan_shift(m, s, g, n_keep, n_discard));
    // The renumbered window is not held: keep what can be served, the caller recomputes.
    if (!plans.back().servable) return truncate(seq, n_keep);
  }
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    m.ensure_free(g, free_pages_needed(m, s, g, plans[g]), "shift");
  }
  const int64_t new_len = s.length - n_discard;
  try {
    for (int32_t g = 0; g < m.n_groups(); ++g) shift_group(m, s, g, plans[g], rotate);
  } catch (...) {
    // A failed rotation leaves nothing half-renumbered: the sequence is emptied.
    m.release_all(s);
    s.length = 0;
    s.clean_until = kAllClean;
    throw;
  }
  s.length = new_len;
  s.clean_until = std::min(s.clean_until, n_keep);
  normalize_clean(s);
  return new_len;
}

}  // namespace keel::kv
