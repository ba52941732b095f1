// Helpers for the KV cache tests: layouts, deterministic rows, the row a cache of a given
// type must return for a written row, a rope-like test rotator, and reading rows through
// a KvLayerView the way attention kernels do.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kv/kv_cache.h"
#include "tensor/q8_tile.h"
#include "tensor/types.h"

namespace keel::kv::test {

inline constexpr int64_t kHeads = 2;
inline constexpr int64_t kHeadDim = 32;
inline constexpr int64_t kRowElems = kHeads * kHeadDim;
inline constexpr int64_t kRopeDims = 16;  // partial rotary: first 16 of 32 dims per head

inline KvLayout make_layout(std::vector<int32_t> windows) {
  KvLayout l;
  l.layer_window = std::move(windows);
  l.n_kv_heads = kHeads;
  l.head_dim_k = kHeadDim;
  l.head_dim_v = kHeadDim;
  return l;
}

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A row of kRowElems values in [-2, 2) determined by (key, layer, is_v).
inline std::vector<float> make_row(uint64_t key, int32_t layer, bool is_v) {
  std::vector<float> row(kRowElems);
  uint64_t s = mix(key * 131 + static_cast<uint64_t>(layer) * 2 + (is_v ? 1 : 0));
  for (auto& x : row) {
    s = mix(s);
    x = static_cast<float>(static_cast<int64_t>(s >> 40) - (int64_t{1} << 23)) / float(1 << 22);
  }
  return row;
}

// What a cache of `type` returns for a written row: dequantize(quantize(row)).
inline std::vector<float> stored(tensor::DType type, const std::vector<float>& row) {
  std::vector<uint8_t> buf(tensor::row_bytes(type, static_cast<int64_t>(row.size())));
  std::vector<float> out(row.size());
  tensor::quantize_row(type, row.data(), buf.data(), static_cast<int64_t>(row.size()));
  tensor::dequantize_row(type, buf.data(), out.data(), static_cast<int64_t>(row.size()));
  return out;
}

// Rotates, per head, the first kRopeDims dims in adjacent pairs by delta * theta_i.
inline void test_rotate(int32_t layer, float* rows, int64_t n_rows, int64_t delta) {
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t h = 0; h < kHeads; ++h) {
      float* x = rows + r * kRowElems + h * kHeadDim;
      for (int64_t i = 0; i < kRopeDims / 2; ++i) {
        const double theta = std::pow(100.0, -2.0 * double(i) / kRopeDims) * (1 + layer);
        const double c = std::cos(double(delta) * theta), s = std::sin(double(delta) * theta);
        const double a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = static_cast<float>(a * c - b * s);
        x[2 * i + 1] = static_cast<float>(a * s + b * c);
      }
    }
  }
}

// Reads the K (or V) row of position pos through a view, as a kernel would.
inline std::vector<float> view_row(const KvLayerView& v, int64_t pos, bool is_v) {
  const auto& pages = is_v ? v.v_pages : v.k_pages;
  const uint8_t* page = pages.at(static_cast<size_t>(pos / v.page_tokens));
  if (page == nullptr) return {};
  const size_t stride = is_v ? v.v_token_stride : v.k_token_stride;
  const size_t head_bytes = is_v ? v.v_head_bytes : v.k_head_bytes;
  const int64_t dim = is_v ? v.head_dim_v : v.head_dim_k;
  std::vector<float> row(static_cast<size_t>(v.n_kv_heads * dim));
  for (int64_t h = 0; h < v.n_kv_heads; ++h) {
    if (is_v ? v.v_pairs : v.k_tiles) {
      const tensor::q8_tile::Shape shape = is_v ? tensor::q8_tile::value_pairs(v.page_tokens, dim)
                                                : tensor::q8_tile::key_groups(v.page_tokens, dim);
      tensor::q8_tile::read_row(page + h * head_bytes, shape, pos % v.page_tokens, row.data() + h * dim);
      continue;
    }
    tensor::dequantize_row(is_v ? v.v_type : v.k_type,
                           page + (pos % v.page_tokens) * stride + h * head_bytes,
                           row.data() + h * dim, dim);
  }
  return row;
}

// Options for small test caches.
inline KvOptions test_options(tensor::DType k, tensor::DType v, int32_t page = 4,
                              int64_t max_tokens = 256, int32_t slack = 4) {
  KvOptions o;
  o.k_type = k;
  o.v_type = v;
  o.page_tokens = page;
  o.max_tokens = max_tokens;
  o.max_sequences = 4;
  o.window_slack_tokens = slack;
  o.max_batch_tokens = 64;
  return o;
}

// Appends n positions to seq whose rows are make_row(key + position, layer, is_v).
inline void append_rows(KvCache& c, SeqId s, int64_t n, uint64_t key) {
  c.reserve(s, n);
  const int64_t len = c.length(s);
  for (int64_t p = len; p < len + n; ++p) {
    for (int32_t l = 0; l < c.layout().n_layers(); ++l) {
      c.write_k(s, l, p, make_row(key + p, l, false).data());
      c.write_v(s, l, p, make_row(key + p, l, true).data());
    }
  }
  c.commit(s, n);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace keel::kv::test
