// Flash attention micro-benchmarks at TinyLlama-1.1B's attention shape (32 query heads,
// 4 kv heads, head_dim 64, pages of 32): a causal prefill of 512 rows and one decode row at
// depth 4096, per KV type and tile kernel (twin / AVX2 / AVX-512), on 1 and 2 threads.
// Counter: key-head pairs scored per second (one pair = one q·k and one p·v of head_dim).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kv/page_pool.h"
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "tensor/q8_tile.h"
#include "tensor/types.h"

namespace {

using keel::kernels::detail::FlashIsa;
using keel::tensor::DType;

constexpr int64_t kHeads = 32, kKvHeads = 4, kHeadDim = 64;
constexpr int32_t kPage = 32;

// One layer's pages for n_pos positions, random rows stored in `type`. With layers > 1 the
// pages sit in one pool as in the KV cache (kv/layer_groups.h): each page has a slice per
// layer, slice-major, and the view is layer 0's, so a decode step's rows lie as in a model
// of that many layers and come from DRAM, not from a cache the benchmark warmed.
struct Pages {
  std::unique_ptr<keel::kv::PagePool> pool;  // the KV cache's own allocator (huge-page advised)
  keel::kv::KvLayerView view;
  std::vector<keel::kv::KvLayerView> layer_views;  // [layers]: the same positions, layer l
  // tiles: q8_0 K and V stored as the KV cache stores them (kv::KvLayerView::k_tiles,
  // v_pairs); false keeps rows (what the cache did before, and does for other page sizes).
  Pages(DType type, int64_t n_pos, int64_t layers, bool tiles) {
    const auto k_shape = keel::tensor::q8_tile::key_groups(kPage, kHeadDim);
    const auto v_shape = keel::tensor::q8_tile::value_pairs(kPage, kHeadDim);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    view.k_type = view.v_type = type;
    view.n_kv_heads = kKvHeads;
    view.head_dim_k = view.head_dim_v = kHeadDim;
    view.page_tokens = kPage;
    view.n_positions = n_pos;
    view.k_head_bytes = view.v_head_bytes = keel::tensor::row_bytes(type, kHeadDim);
    view.k_token_stride = view.v_token_stride = view.k_head_bytes * kKvHeads;
    const size_t half = view.k_token_stride * kPage;  // one layer's K (or V) rows of a page
    view.k_tiles = view.v_pairs = tiles && type == DType::kQ8_0;
    if (view.k_tiles) {
      view.k_head_bytes = view.v_head_bytes = keel::tensor::q8_tile::tile_bytes(k_shape);  // both shapes: the same bytes
      view.k_token_stride = view.v_token_stride = 0;
    }
    const int64_t n_pages = (n_pos + kPage - 1) / kPage;
    pool = std::make_unique<keel::kv::PagePool>(n_pages, 2 * half, static_cast<int32_t>(layers));
    std::vector<keel::kv::PageId> ids;
    std::vector<float> row(kHeadDim);
    for (int64_t pg = 0; pg < n_pages; ++pg) {
      ids.push_back(pool->allocate());
      uint8_t* k = pool->slice(ids.back(), 0);
      for (uint8_t* base : {k, k + half}) {
        for (int64_t t = 0; t < kPage * kKvHeads; ++t) {
          for (auto& x : row) x = nd(rng);
          if (view.k_tiles) {  // row t % kPage of head t / kPage's tile
            keel::tensor::q8_tile::write_row(base + (t / kPage) * view.k_head_bytes, base == k ? k_shape : v_shape,
                                             t % kPage, row.data());
          } else {
            keel::tensor::quantize_row(type, row.data(), base + t * view.k_head_bytes, kHeadDim);
          }
        }
      }
    }
    for (int64_t l = 0; l < layers; ++l) {
      layer_views.push_back(view);
      for (keel::kv::PageId id : ids) {
        const uint8_t* k = pool->slice(id, static_cast<int32_t>(l));
        if (l > 0) std::memcpy(pool->slice(id, static_cast<int32_t>(l)), pool->slice(id, 0), 2 * half);
        layer_views.back().k_pages.push_back(k);
        layer_views.back().v_pages.push_back(k + half);
      }
    }
    view = layer_views[0];
  }
};

// Reads a buffer well beyond the L3 so the next iteration's pages come from DRAM, as in a
// model's decode step, where the layer's weights stream through the caches between two
// visits of its KV pages (a pool merely larger than the L3 still keeps part of it).
// The pool's threads share the sweep, as they share a layer's weights in the model, so the
// workers are awake (spinning) when the timed call starts, as they are there.
void evict_caches(keel::ThreadPool& pool) {
  static std::vector<uint8_t> sweep(size_t{96} << 20, 1);
  const int64_t lines = static_cast<int64_t>(sweep.size() / 64);
  pool.parallel_for(lines, (lines + pool.size() - 1) / pool.size(), [](int64_t b, int64_t e) {
    uint64_t x = 0;
    for (int64_t i = b; i < e; ++i) x += sweep[static_cast<size_t>(i) * 64];
    benchmark::DoNotOptimize(x);
  });
}

// args: type, rows (the last `rows` positions of a context of `ctx`), ctx, threads, isa,
// layers per page (Pages), evict (1: caches evicted before each timed call, untimed),
// q8_0 K/V layout (1: tiles, as the KV cache stores them; 0: rows)
void BM_FlashAttention(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), ctx = state.range(2);
  Pages pages(type, ctx, state.range(5), state.range(7) != 0);
  keel::ThreadPool pool(static_cast<int>(state.range(3)));
  const auto isa = static_cast<FlashIsa>(state.range(4));
  if (!keel::kernels::detail::flash_isa_available(isa)) {
    state.SkipWithError("ISA not available");
    return;
  }
  keel::kernels::detail::ScopedFlashIsa scoped(isa);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(rows * kHeads * kHeadDim), out(rows * kHeads * kHeadDim);
  for (auto& x : q) x = nd(rng);
  std::vector<int64_t> pos(rows);
  // Iteration i attends over layer i mod layers (as a decode step walks the layers).
  std::vector<std::vector<const keel::kv::KvLayerView*>> views;
  for (const auto& lv : pages.layer_views) views.emplace_back(rows, &lv);
  int64_t pairs = 0;
  for (int64_t r = 0; r < rows; ++r) {
    pos[r] = ctx - rows + r;
    pairs += (pos[r] + 1) * kHeads;
  }
  keel::kernels::AttentionParams p;
  p.n_head = kHeads;
  p.scale = 1.0f / std::sqrt(float(kHeadDim));
  p.flash = true;
  size_t layer = 0;
  const bool evict = state.range(6) != 0;
  for (auto _ : state) {
    if (evict) {
      state.PauseTiming();
      evict_caches(pool);
      state.ResumeTiming();
    }
    keel::kernels::attention(q.data(), pos.data(), views[layer].data(), rows, p, out.data(), &pool);
    layer = (layer + 1) % views.size();
    benchmark::DoNotOptimize(out.data());
  }
  static const char* isa_names[] = {"auto", "twin", "avx2", "avx512"};
  state.SetLabel(std::string(keel::tensor::dtype_name(type)) + " " + isa_names[state.range(4)] +
                 (pages.view.k_tiles ? " tiles" : ""));
  state.counters["pairs_per_s"] = benchmark::Counter(double(pairs), benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::kF16, DType::kQ8_0}) {
    for (int isa : {int(FlashIsa::kAvx2), int(FlashIsa::kAvx512)}) {
      for (int threads : {1, 2}) {
        b->Args({int64_t(t), 512, 512, threads, isa, 1, 0, 1});   // prefill pp512
        b->Args({int64_t(t), 1, 4096, threads, isa, 1, 0, 1});    // decode at depth 4096
      }
    }
  }
  // Decode at depth 4096 in a 22-layer pool (TinyLlama's; 49 MB, beyond L3): the model's case.
  b->Args({int64_t(DType::kQ8_0), 1, 4096, 2, int(FlashIsa::kAvx512), 22, 0, 1});
  // Past 4096 by half a segment (the decode of a tg128 run at depth 4096): 17 segments.
  b->Args({int64_t(DType::kQ8_0), 1, 4096 + 128, 2, int(FlashIsa::kAvx512), 22, 0, 1});
  // The same with the caches evicted before each call: every page from DRAM, as in the model.
  b->Args({int64_t(DType::kQ8_0), 1, 4096, 2, int(FlashIsa::kAvx512), 22, 1, 1});
  b->Args({int64_t(DType::kQ8_0), 1, 1024, 1, int(FlashIsa::kAvx512), 1, 0, 1});  // K/V in L2
  b->Args({int64_t(DType::kQ8_0), 1, 65536, 2, int(FlashIsa::kAvx512), 1, 0, 1});  // K/V beyond L3 (36 MB)
  b->Args({int64_t(DType::kF16), 64, 512, 1, int(FlashIsa::kTwin), 1, 0, 1});  // the scalar twin
  // A 512-token prompt chunk at depth 4096 (pp512 @ d4096), both KV types the targets name.
  b->Args({int64_t(DType::kF16), 512, 4096 + 512, 2, int(FlashIsa::kAvx512), 1, 0, 1});
  b->Args({int64_t(DType::kQ8_0), 512, 4096 + 512, 2, int(FlashIsa::kAvx512), 1, 0, 1});
  // q8_0 K/V in rows (the layout before tiles), beside the cache's layout above.
  b->Args({int64_t(DType::kQ8_0), 1, 4096, 2, int(FlashIsa::kAvx512), 22, 0, 0});
  b->Args({int64_t(DType::kQ8_0), 1, 1024, 1, int(FlashIsa::kAvx512), 1, 0, 0});
  b->Args({int64_t(DType::kQ8_0), 512, 512, 2, int(FlashIsa::kAvx512), 1, 0, 0});
}

BENCHMARK(BM_FlashAttention)->Apply(Shapes)->MeasureProcessCPUTime();

}  // namespace
