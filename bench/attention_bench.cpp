// Flash attention micro-benchmarks at TinyLlama-1.1B's attention shape (32 query heads,
// 4 kv heads, head_dim 64, pages of 32): a causal prefill of 512 rows and one decode row at
// depth 4096, per KV type and tile kernel (twin / AVX2 / AVX-512), on 1 and 2 threads.
// Counter: key-head pairs scored per second (one pair = one q·k and one p·v of head_dim).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/attention_flash.h"
#include "tensor/types.h"

namespace {

using keel::kernels::detail::FlashIsa;
using keel::tensor::DType;

constexpr int64_t kHeads = 32, kKvHeads = 4, kHeadDim = 64;
constexpr int32_t kPage = 32;

// One layer's pages for n_pos positions, random rows stored in `type`.
struct Pages {
  std::vector<std::vector<uint8_t>> k, v;
  keel::kv::KvLayerView view;
  Pages(DType type, int64_t n_pos) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    view.k_type = view.v_type = type;
    view.n_kv_heads = kKvHeads;
    view.head_dim_k = view.head_dim_v = kHeadDim;
    view.page_tokens = kPage;
    view.n_positions = n_pos;
    view.k_head_bytes = view.v_head_bytes = keel::tensor::row_bytes(type, kHeadDim);
    view.k_token_stride = view.v_token_stride = view.k_head_bytes * kKvHeads;
    std::vector<float> row(kHeadDim);
    for (int64_t pg = 0; pg < (n_pos + kPage - 1) / kPage; ++pg) {
      for (auto* pages : {&k, &v}) {
        pages->emplace_back(view.k_token_stride * kPage);
        for (int64_t t = 0; t < kPage * kKvHeads; ++t) {
          for (auto& x : row) x = nd(rng);
          keel::tensor::quantize_row(type, row.data(), pages->back().data() + t * view.k_head_bytes, kHeadDim);
        }
      }
      view.k_pages.push_back(k.back().data());
      view.v_pages.push_back(v.back().data());
    }
  }
};

// args: type, rows (the last `rows` positions of a context of `ctx`), ctx, threads, isa
void BM_FlashAttention(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), ctx = state.range(2);
  Pages pages(type, ctx);
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
  std::vector<const keel::kv::KvLayerView*> views(rows, &pages.view);
  int64_t pairs = 0;
  for (int64_t r = 0; r < rows; ++r) {
    pos[r] = ctx - rows + r;
    pairs += (pos[r] + 1) * kHeads;
  }
  keel::kernels::AttentionParams p;
  p.n_head = kHeads;
  p.scale = 1.0f / std::sqrt(float(kHeadDim));
  p.flash = true;
  for (auto _ : state) {
    keel::kernels::attention(q.data(), pos.data(), views.data(), rows, p, out.data(), &pool);
    benchmark::DoNotOptimize(out.data());
  }
  static const char* isa_names[] = {"auto", "twin", "avx2", "avx512"};
  state.SetLabel(std::string(keel::tensor::dtype_name(type)) + " " + isa_names[state.range(4)]);
  state.counters["pairs_per_s"] = benchmark::Counter(double(pairs), benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::kF16, DType::kQ8_0}) {
    for (int isa : {int(FlashIsa::kAvx2), int(FlashIsa::kAvx512)}) {
      for (int threads : {1, 2}) {
        b->Args({int64_t(t), 512, 512, threads, isa});   // prefill pp512
        b->Args({int64_t(t), 1, 4096, threads, isa});    // decode at depth 4096
      }
    }
  }
  b->Args({int64_t(DType::kQ8_0), 1, 65536, 2, int(FlashIsa::kAvx512)});  // K/V beyond L3 (36 MB)
  b->Args({int64_t(DType::kF16), 64, 512, 1, int(FlashIsa::kTwin)});  // the scalar twin
}

BENCHMARK(BM_FlashAttention)->Apply(Shapes)->MeasureProcessCPUTime();

}  // namespace
