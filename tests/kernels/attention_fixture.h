// Test fixture shared by the attention tests: a hand-built paged K/V store with the layout
// kv::KvLayerView describes, filled with normal random rows stored in the chosen types.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kv/kv_cache.h"
#include "tensor/q8_tile.h"
#include "tensor/types.h"

namespace keel::kernels::attn_test {

struct FakeLayer {
  int64_t n_pos, n_kv, dk, dv;
  int32_t pt;
  std::vector<float> k, v;  // [n_pos][n_kv][d] f32 originals
  std::vector<std::vector<uint8_t>> k_pages, v_pages;
  kv::KvLayerView view;

  FakeLayer(int64_t n_pos_, int64_t n_kv_, int64_t dk_, int64_t dv_, int32_t pt_,
            tensor::DType kt, tensor::DType vt, uint32_t seed)
      : n_pos(n_pos_), n_kv(n_kv_), dk(dk_), dv(dv_), pt(pt_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    k.resize(n_pos * n_kv * dk);
    v.resize(n_pos * n_kv * dv);
    for (auto& x : k) x = d(rng);
    for (auto& x : v) x = d(rng);
    view.k_type = kt;
    view.v_type = vt;
    view.n_kv_heads = n_kv;
    view.head_dim_k = dk;
    view.head_dim_v = dv;
    view.page_tokens = pt;
    view.n_positions = n_pos;
    view.k_head_bytes = tensor::row_bytes(kt, dk);
    view.v_head_bytes = tensor::row_bytes(vt, dv);
    view.k_token_stride = view.k_head_bytes * n_kv;
    view.v_token_stride = view.v_head_bytes * n_kv;
    // q8_0 as the KV cache stores it: tiles per kv head (kv::KvLayerView::k_tiles / v_pairs).
    view.k_tiles = kt == tensor::DType::kQ8_0 && pt % 16 == 0 && dk % 32 == 0;
    view.v_pairs = vt == tensor::DType::kQ8_0 && pt % 2 == 0 && dv % 32 == 0;
    const size_t k_page_bytes = view.k_token_stride * pt, v_page_bytes = view.v_token_stride * pt;
    const tensor::q8_tile::Shape k_shape = tensor::q8_tile::key_groups(pt, dk);
    const tensor::q8_tile::Shape v_shape = tensor::q8_tile::value_pairs(pt, dv);
    if (view.k_tiles) {
      view.k_head_bytes = tensor::q8_tile::tile_bytes(k_shape);
      view.k_token_stride = 0;
    }
    if (view.v_pairs) {
      view.v_head_bytes = tensor::q8_tile::tile_bytes(v_shape);
      view.v_token_stride = 0;
    }
    const int64_t n_pages = (n_pos + pt - 1) / pt;
    k_pages.resize(n_pages);
    v_pages.resize(n_pages);
    for (int64_t pg = 0; pg < n_pages; ++pg) {
      k_pages[pg].resize(k_page_bytes);
      v_pages[pg].resize(v_page_bytes);
      for (int64_t t = 0; t < pt && pg * pt + t < n_pos; ++t)
        for (int64_t h = 0; h < n_kv; ++h) {
          const int64_t p = pg * pt + t;
          uint8_t* k_head = k_pages[pg].data() + t * view.k_token_stride + h * view.k_head_bytes;
          uint8_t* v_head = v_pages[pg].data() + t * view.v_token_stride + h * view.v_head_bytes;
          float* k_row = &k[(p * n_kv + h) * dk];
          float* v_row = &v[(p * n_kv + h) * dv];
          // Keep the reference in the stored precision.
          store(view.k_tiles, k_shape, kt, k_head, t, k_row, dk);
          store(view.v_pairs, v_shape, vt, v_head, t, v_row, dv);
        }
      view.k_pages.push_back(k_pages[pg].data());
      view.v_pages.push_back(v_pages[pg].data());
    }
  }
  // Stores row t of a page's head (as a tile row or a row of `type`) and puts the stored
  // values back into `row`.
  static void store(bool tiled, const tensor::q8_tile::Shape& shape, tensor::DType type, uint8_t* head,
                    int64_t t, float* row, int64_t d) {
    if (tiled) {
      tensor::q8_tile::write_row(head, shape, t, row);
      tensor::q8_tile::read_row(head, shape, t, row);
    } else {
      tensor::quantize_row(type, row, head, d);
      tensor::dequantize_row(type, head, row, d);
    }
  }
  // Drops pages wholly below `first` (as a sliding-window group does).
  void drop_below(int64_t first) {
    view.first_held = first;
    for (int64_t pg = 0; (pg + 1) * pt <= first; ++pg) {
      view.k_pages[pg] = nullptr;
      view.v_pages[pg] = nullptr;
    }
  }
};

}  // namespace keel::kernels::attn_test
