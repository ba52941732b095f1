// KvCache: construction, sequences, reserve/write/commit/rollback and views.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "kv/kv_state.h"

namespace keel::kv {

std::string seq_name(SeqId seq) { return "kv sequence " + std::to_string(seq); }

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

std::vector<PagePool> make_pools(const GroupLayout& g) {
  std::vector<PagePool> pools;
  for (const GroupSpec& s : g.groups) {
    pools.emplace_back(s.pages, s.layer_bytes, static_cast<int32_t>(s.layers.size()));
  }
  return pools;
}

}  // namespace

KvCache::Impl::Impl(const KvLayout& l, const KvOptions& o)
    : layout(l),
      options(o),
      groups(make_group_layout(l, o)),
      pools(make_pools(groups)),
      seqs(o.max_sequences),
      index(o.page_tokens, static_cast<int32_t>(groups.groups.size())) {}

Sequence& KvCache::Impl::live_seq(SeqId seq, const char* op) {
  return const_cast<Sequence&>(static_cast<const Impl*>(this)->live_seq(seq, op));
}

const Sequence& KvCache::Impl::live_seq(SeqId seq, const char* op) const {
  if (seq < 0 || seq >= static_cast<SeqId>(seqs.size()) || !seqs[seq].live) {
    invalid(std::string("kv ") + op + ": " + seq_name(seq) + " does not exist");
  }
  return seqs[seq];
}

void KvCache::Impl::check_layer(int32_t layer, const char* op) const {
  if (layer < 0 || layer >= layout.n_layers()) {
    invalid(std::string("kv ") + op + ": layer " + std::to_string(layer) + " out of range [0, " +
            std::to_string(layout.n_layers()) + ")");
  }
}

void KvCache::Impl::check_no_reservation(SeqId seq, const Sequence& s, const char* op) const {
  if (s.reserved != 0) {
    invalid(std::string("kv ") + op + ": " + seq_name(seq) + " has " +
            std::to_string(s.reserved) + " reserved positions; commit or roll back first");
  }
}

SeqId KvCache::Impl::free_slot(const char* op) const {
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (!seqs[i].live) return static_cast<SeqId>(i);
  }
  throw Error(ErrorCode::kBusy, std::string("kv ") + op + ": all " +
                                    std::to_string(seqs.size()) + " sequence slots in use");
}

int64_t KvCache::Impl::first_held_page(const std::vector<PageId>& table) {
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i] != kNoPage) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(table.size());
}

int64_t KvCache::Impl::servable_length(const Sequence& s, int64_t n) const {
  if (n == 0) return 0;
  for (int32_t g = 0; g < n_groups(); ++g) {
    const int64_t first = first_held_page(s.pages[g]) * page_tokens();
    if (first > need_from(spec(g).window, n)) return 0;
  }
  return n;
}

void KvCache::Impl::trim_table(int32_t g, Sequence& s, int64_t n_pages) {
  auto& table = s.pages[g];
  while (static_cast<int64_t>(table.size()) > n_pages) {
    if (table.back() != kNoPage) pools[g].release(table.back());
    table.pop_back();
  }
  if (!spec(g).sliding()) return;
  const int64_t keep_page = keep_from(spec(g).window, options.window_slack_tokens, s.length) /
                            page_tokens();
  for (int64_t i = 0; i < keep_page && i < static_cast<int64_t>(table.size()); ++i) {
    if (table[i] != kNoPage) {
      pools[g].release(table[i]);
      table[i] = kNoPage;
    }
  }
}

void KvCache::Impl::release_all(Sequence& s) {
  for (int32_t g = 0; g < n_groups(); ++g) {
    for (PageId p : s.pages[g]) {
      if (p != kNoPage) pools[g].release(p);
    }
    s.pages[g].clear();
  }
}

uint8_t* KvCache::Impl::slice(Side side, int32_t g, PageId page, int32_t local) {
  uint8_t* base = pools[g].slice(page, local);
  return side == Side::kK ? base : base + page_tokens() * spec(g).k_row_bytes;
}
const uint8_t* KvCache::Impl::slice(Side side, int32_t g, PageId page, int32_t local) const {
  return const_cast<Impl*>(this)->slice(side, g, page, local);
}

// q8_0 K in 16-key groups needs pages of whole groups; q8_0 V in pairs, an even page size.
bool KvCache::Impl::tiled(Side side) const {
  const bool k = side == Side::kK;
  return (k ? options.k_type : options.v_type) == tensor::DType::kQ8_0 && page_tokens() % (k ? 16 : 2) == 0;
}

tensor::q8_tile::Shape KvCache::Impl::tile_shape(Side side) const {
  return side == Side::kK ? tensor::q8_tile::key_groups(page_tokens(), layout.head_dim_k)
                          : tensor::q8_tile::value_pairs(page_tokens(), layout.head_dim_v);
}

namespace {
struct SideRows {
  tensor::DType type;
  int64_t dim;
  size_t row_bytes;
};
SideRows side_rows(const KvCache::Impl& m, KvCache::Impl::Side side, int32_t g) {
  if (side == KvCache::Impl::Side::kK) return {m.options.k_type, m.layout.head_dim_k, m.spec(g).k_row_bytes};
  return {m.options.v_type, m.layout.head_dim_v, m.spec(g).v_row_bytes};
}
}  // namespace

void KvCache::Impl::store_row(Side side, int32_t g, PageId page, int32_t local, int64_t pos, const float* row) {
  const SideRows r = side_rows(*this, side, g);
  const int64_t j = pos % page_tokens();
  uint8_t* base = slice(side, g, page, local);
  if (!tiled(side)) {
    tensor::quantize_row(r.type, row, base + j * r.row_bytes, layout.n_kv_heads * r.dim);
    return;
  }
  const tensor::q8_tile::Shape shape = tile_shape(side);
  const size_t tile = tensor::q8_tile::tile_bytes(shape);
  for (int64_t h = 0; h < layout.n_kv_heads; ++h) tensor::q8_tile::write_row(base + h * tile, shape, j, row + h * r.dim);
}

void KvCache::Impl::load_row(Side side, int32_t g, PageId page, int32_t local, int64_t pos, float* row) const {
  const SideRows r = side_rows(*this, side, g);
  const int64_t j = pos % page_tokens();
  const uint8_t* base = slice(side, g, page, local);
  if (!tiled(side)) {
    tensor::dequantize_row(r.type, base + j * r.row_bytes, row, layout.n_kv_heads * r.dim);
    return;
  }
  const tensor::q8_tile::Shape shape = tile_shape(side);
  const size_t tile = tensor::q8_tile::tile_bytes(shape);
  for (int64_t h = 0; h < layout.n_kv_heads; ++h) tensor::q8_tile::read_row(base + h * tile, shape, j, row + h * r.dim);
}

void KvCache::Impl::copy_row(Side side, int32_t g, int32_t local, PageId dst, int64_t dst_pos, PageId src,
                             int64_t src_pos) {
  const int64_t pt = page_tokens();
  uint8_t* to = slice(side, g, dst, local);
  const uint8_t* from = slice(side, g, src, local);
  if (!tiled(side)) {
    const size_t bytes = side_rows(*this, side, g).row_bytes;
    std::memcpy(to + (dst_pos % pt) * bytes, from + (src_pos % pt) * bytes, bytes);
    return;
  }
  const tensor::q8_tile::Shape shape = tile_shape(side);
  const size_t tile = tensor::q8_tile::tile_bytes(shape);
  for (int64_t h = 0; h < layout.n_kv_heads; ++h)
    tensor::q8_tile::copy_row(to + h * tile, dst_pos % pt, from + h * tile, src_pos % pt, shape);
}

// ---------------------------------------------------------------------------------------

KvCache::KvCache(const KvLayout& layout, const KvOptions& options)
    : impl_(std::make_unique<Impl>(layout, options)) {}

KvCache::~KvCache() = default;

const KvLayout& KvCache::layout() const { return impl_->layout; }
const KvOptions& KvCache::options() const { return impl_->options; }

SeqId KvCache::create() {
  const SeqId id = impl_->free_slot("create");
  Sequence& s = impl_->seqs[id];
  s = Sequence{};
  s.live = true;
  s.pages.assign(impl_->n_groups(), {});
  return id;
}

void KvCache::release(SeqId seq) {
  Sequence& s = impl_->live_seq(seq, "release");
  impl_->release_all(s);
  s = Sequence{};
}

int64_t KvCache::length(SeqId seq) const { return impl_->live_seq(seq, "length").length; }

bool KvCache::is_live(SeqId seq) const {
  return seq >= 0 && seq < static_cast<SeqId>(impl_->seqs.size()) && impl_->seqs[seq].live;
}

std::vector<SeqId> KvCache::live_sequences() const {
  std::vector<SeqId> out;
  for (size_t i = 0; i < impl_->seqs.size(); ++i) {
    if (impl_->seqs[i].live) out.push_back(static_cast<SeqId>(i));
  }
  return out;
}

int64_t KvCache::reserved(SeqId seq) const { return impl_->live_seq(seq, "reserved").reserved; }

void KvCache::reserve(SeqId seq, int64_t n_new) {
  Impl& m = *impl_;
  Sequence& s = m.live_seq(seq, "reserve");
  m.check_no_reservation(seq, s, "reserve");
  int64_t most = 0;  // positions the largest pool can hold; bounds the page arithmetic
  for (const PagePool& pool : m.pools) most = std::max(most, pool.capacity() * m.page_tokens());
  if (n_new < 0 || n_new > most) {
    invalid("kv reserve: " + seq_name(seq) + ": " + std::to_string(n_new) +
            " new positions out of range [0, " + std::to_string(most) + "]");
  }
  if (n_new == 0) return;
  const int64_t P = m.page_tokens();
  const int64_t new_pages = pages_for(s.length + n_new, m.page_tokens());
  // Pages each group needs: the new ones, plus a copy of a shared page being extended.
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    const auto& table = s.pages[g];
    int64_t need = new_pages - static_cast<int64_t>(table.size());
    if (s.length % P != 0 && m.pools[g].refcount(table[s.length / P]) > 1) ++need;
    m.ensure_free(g, need, "reserve");
  }
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    auto& table = s.pages[g];
    PagePool& pool = m.pools[g];
    if (s.length % P != 0) {
      PageId& shared = table[s.length / P];
      if (pool.refcount(shared) > 1) {
        const PageId copy = pool.allocate();
        pool.copy_page(copy, shared);
        pool.release(shared);
        shared = copy;
        ++m.copied_pages;
      }
    }
    while (static_cast<int64_t>(table.size()) < new_pages) table.push_back(pool.allocate());
  }
  s.reserved = n_new;
}

namespace {

struct RowTarget {
  int32_t group;
  int32_t local;
  PageId page;
};

RowTarget writable_row(KvCache::Impl& m, SeqId seq, int32_t layer, int64_t pos, const char* op) {
  const Sequence& s = m.live_seq(seq, op);
  m.check_layer(layer, op);
  if (pos < s.length || pos >= s.length + s.reserved) {
    invalid(std::string("kv ") + op + ": " + seq_name(seq) + " layer " + std::to_string(layer) +
            ": position " + std::to_string(pos) + " outside the reserved range [" +
            std::to_string(s.length) + ", " + std::to_string(s.length + s.reserved) + ")");
  }
  const LayerSlot slot = m.groups.layer_slot[layer];
  return {slot.group, slot.local, s.pages[slot.group][pos / m.page_tokens()]};
}

RowTarget held_row(const KvCache::Impl& m, SeqId seq, int32_t layer, int64_t pos, const char* op) {
  const Sequence& s = m.live_seq(seq, op);
  m.check_layer(layer, op);
  const LayerSlot slot = m.groups.layer_slot[layer];
  const int64_t end = s.length + s.reserved;
  const auto& table = s.pages[slot.group];
  if (pos < 0 || pos >= end || table[pos / m.page_tokens()] == kNoPage) {
    invalid(std::string("kv ") + op + ": " + seq_name(seq) + " layer " + std::to_string(layer) +
            ": position " + std::to_string(pos) + " not held (length " + std::to_string(end) +
            ", first held " +
            std::to_string(KvCache::Impl::first_held_page(table) * m.page_tokens()) + ")");
  }
  return {slot.group, slot.local, table[pos / m.page_tokens()]};
}

}  // namespace

void KvCache::write_k(SeqId seq, int32_t layer, int64_t pos, const float* row) {
  const RowTarget t = writable_row(*impl_, seq, layer, pos, "write_k");
  impl_->store_row(Impl::Side::kK, t.group, t.page, t.local, pos, row);
}

void KvCache::write_v(SeqId seq, int32_t layer, int64_t pos, const float* row) {
  const RowTarget t = writable_row(*impl_, seq, layer, pos, "write_v");
  impl_->store_row(Impl::Side::kV, t.group, t.page, t.local, pos, row);
}

void KvCache::read_k(SeqId seq, int32_t layer, int64_t pos, float* row) const {
  const RowTarget t = held_row(*impl_, seq, layer, pos, "read_k");
  impl_->load_row(Impl::Side::kK, t.group, t.page, t.local, pos, row);
}

void KvCache::read_v(SeqId seq, int32_t layer, int64_t pos, float* row) const {
  const RowTarget t = held_row(*impl_, seq, layer, pos, "read_v");
  impl_->load_row(Impl::Side::kV, t.group, t.page, t.local, pos, row);
}

void KvCache::commit(SeqId seq, int64_t n_new) {
  Impl& m = *impl_;
  Sequence& s = m.live_seq(seq, "commit");
  if (n_new < 0 || n_new > s.reserved) {
    invalid("kv commit: " + seq_name(seq) + ": " + std::to_string(n_new) +
            " positions but only " + std::to_string(s.reserved) + " reserved");
  }
  s.length += n_new;
  s.reserved = 0;
  for (int32_t g = 0; g < m.n_groups(); ++g) {
    m.trim_table(g, s, pages_for(s.length, m.page_tokens()));
  }
}

void KvCache::rollback(SeqId seq) {
  impl_->live_seq(seq, "rollback");
  commit(seq, 0);
}

KvLayerView KvCache::view(SeqId seq, int32_t layer) const {
  KvLayerView v;
  view(seq, layer, &v);
  return v;
}

void KvCache::view(SeqId seq, int32_t layer, KvLayerView* out) const {
  const Impl& m = *impl_;
  const Sequence& s = m.live_seq(seq, "view");
  m.check_layer(layer, "view");
  const LayerSlot slot = m.groups.layer_slot[layer];
  const GroupSpec& sp = m.spec(slot.group);
  KvLayerView& v = *out;
  v.k_pages.clear();
  v.v_pages.clear();
  v.k_type = m.options.k_type;
  v.v_type = m.options.v_type;
  v.n_kv_heads = m.layout.n_kv_heads;
  v.head_dim_k = m.layout.head_dim_k;
  v.head_dim_v = m.layout.head_dim_v;
  v.page_tokens = m.page_tokens();
  v.window = sp.window;
  v.n_positions = s.length + s.reserved;
  const auto& table = s.pages[slot.group];
  v.first_held = std::min(v.n_positions, Impl::first_held_page(table) * m.page_tokens());
  using Side = Impl::Side;
  v.k_tiles = m.tiled(Side::kK);
  v.v_pairs = m.tiled(Side::kV);
  v.k_token_stride = v.k_tiles ? 0 : sp.k_row_bytes;
  v.v_token_stride = v.v_pairs ? 0 : sp.v_row_bytes;
  v.k_head_bytes = v.k_tiles ? tensor::q8_tile::tile_bytes(m.tile_shape(Side::kK))
                             : tensor::row_bytes(m.options.k_type, m.layout.head_dim_k);
  v.v_head_bytes = v.v_pairs ? tensor::q8_tile::tile_bytes(m.tile_shape(Side::kV))
                             : tensor::row_bytes(m.options.v_type, m.layout.head_dim_v);
  v.k_pages.reserve(table.size());
  v.v_pages.reserve(table.size());
  for (PageId p : table) {
    if (p == kNoPage) {
      v.k_pages.push_back(nullptr);
      v.v_pages.push_back(nullptr);
    } else {
      v.k_pages.push_back(m.slice(Side::kK, slot.group, p, slot.local));
      v.v_pages.push_back(m.slice(Side::kV, slot.group, p, slot.local));
    }
  }
}

}  // namespace keel::kv
