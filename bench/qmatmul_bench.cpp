// Integer-path matmul micro-benchmarks (kernels/qmatmul.h) at TinyLlama-1.1B shapes:
// decode (1 activation row; 8 rows for 8 parallel sequences) with the weights hot in L3 or cold (cycling through copies
// larger than the last-level cache, as a whole model's decode step does), and prefill.
// Counters: packed weight GB/s read (compare decode-cold with `keel bench --roofline`'s read
// bandwidth) and int8 GOPS (compare prefill with the vpdpbusd peak). Benchmarks only: the
// correctness of these paths is tests/kernels/qmatmul_*_test.cpp's job.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "core/large_buffer.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/repack.h"
#include "tensor/types.h"

namespace {

using keel::tensor::DType;

constexpr size_t kColdBytes = size_t(96) << 20;  // 3x this machine's 32 MiB L3

struct Copy {
  keel::LargeBuffer data;
  keel::kernels::WeightMatrix w;
};

struct Weights {
  std::vector<std::unique_ptr<Copy>> copies;
  size_t packed_bytes = 0;  // of one copy
  Weights(DType type, int64_t n_in, int64_t n_out, bool cold, keel::ThreadPool* pool) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 0.5f);
    const size_t rb = keel::tensor::row_bytes(type, n_in);
    std::vector<float> row(n_in);
    do {
      auto c = std::make_unique<Copy>();
      // As in the model: f16 / bf16 rows are read from memory that may sit on huge pages.
      c->data = keel::LargeBuffer(rb * n_out, "benchmark weights");
      uint8_t* base = c->data.data();
      for (int64_t o = 0; o < n_out; ++o) {
        for (auto& v : row) v = nd(rng);
        keel::tensor::quantize_row(type, row.data(), base + o * rb, n_in);
      }
      c->w = keel::kernels::WeightMatrix::packed(type, base, n_in, n_out);
      // f16 / bf16 have no packed copy: their kernels read the rows as stored.
      packed_bytes = c->w.pack ? c->w.pack->get(c->w, pool).bytes() : rb * n_out;
      copies.push_back(std::move(c));
    } while (cold && copies.size() * packed_bytes < kColdBytes);
  }
};

// args: type, n_in, n_out, n_rows, threads, cold
void BM_QMatmul(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t n_in = state.range(1), n_out = state.range(2), n_rows = state.range(3);
  const bool cold = state.range(5) != 0;
  keel::ThreadPool pool(static_cast<int>(state.range(4)));
  Weights w(type, n_in, n_out, cold, &pool);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n_in * n_rows), y(n_out * n_rows);
  for (auto& v : x) v = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    keel::kernels::matmul(w.copies[next]->w, x.data(), n_rows, y.data(), &pool);
    next = (next + 1) % w.copies.size();
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(keel::tensor::dtype_name(type)) + (cold ? " cold" : ""));
  state.counters["weight_GBps"] =
      benchmark::Counter(double(w.packed_bytes), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GOPS"] =
      benchmark::Counter(2.0 * n_in * n_out * n_rows / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// A decode step's products, layer after layer: q/k/v (one input), o, gate/up (one input),
// down at TinyLlama-1.1B's shapes, 1 activation row, through enough layers (each its own
// weights) that every layer comes from memory, as in the model. No element-wise work in
// between: the gap to the single cold matrices above is what a sequence of smaller jobs
// costs (each job's start and finish, the prefetchers' ramp on each matrix), the gap to
// `keel bench` tg what the rest of the step costs. The layers cycled through total at least
// `mib`: 96 is 3x the L3, but with it q4_0 read 54-60 GB/s where the model's own products
// read 44-51 (2026-12-07: a per-shape timer in the model, alternated with this benchmark);
// 640, the size of the 1b q4_0 model, gave 44-51 as well, so the host keeps part of a 96 MiB
// cycle in some cache. The 640 MiB rows take a minute to set up.
// args: type, threads, mib
void BM_DecodeLayers(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  keel::ThreadPool pool(static_cast<int>(state.range(1)));
  const size_t cycle_bytes = static_cast<size_t>(state.range(2)) << 20;
  constexpr int64_t kDim = 2048, kKv = 256, kFf = 5632;
  struct Layer {
    std::unique_ptr<Weights> q, k, v, o, gate, up, down;
  };
  std::vector<Layer> layers;
  size_t layer_bytes = 0;
  do {
    Layer l;
    l.q = std::make_unique<Weights>(type, kDim, kDim, false, &pool);
    l.k = std::make_unique<Weights>(type, kDim, kKv, false, &pool);
    l.v = std::make_unique<Weights>(type, kDim, kKv, false, &pool);
    l.o = std::make_unique<Weights>(type, kDim, kDim, false, &pool);
    l.gate = std::make_unique<Weights>(type, kDim, kFf, false, &pool);
    l.up = std::make_unique<Weights>(type, kDim, kFf, false, &pool);
    l.down = std::make_unique<Weights>(type, kFf, kDim, false, &pool);
    layer_bytes = 0;
    for (const Weights* w : {l.q.get(), l.k.get(), l.v.get(), l.o.get(), l.gate.get(), l.up.get(), l.down.get()})
      layer_bytes += w->packed_bytes;
    layers.push_back(std::move(l));
  } while (layers.size() * layer_bytes < cycle_bytes);
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(kFf), q(kDim), k(kKv), v(kKv), o(kDim), gate(kFf), up(kFf), down(kDim);
  for (auto& e : x) e = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    const Layer& l = layers[next];
    using keel::kernels::WeightMatrix;
    const WeightMatrix* qkv[] = {&l.q->copies[0]->w, &l.k->copies[0]->w, &l.v->copies[0]->w};
    float* qkv_out[] = {q.data(), k.data(), v.data()};
    keel::kernels::matmul_shared_input(qkv, x.data(), 1, qkv_out, 3, &pool);
    keel::kernels::matmul(l.o->copies[0]->w, x.data(), 1, o.data(), &pool);
    const WeightMatrix* ffn[] = {&l.gate->copies[0]->w, &l.up->copies[0]->w};
    float* ffn_out[] = {gate.data(), up.data()};
    keel::kernels::matmul_shared_input(ffn, x.data(), 1, ffn_out, 2, &pool);
    keel::kernels::matmul(l.down->copies[0]->w, x.data(), 1, down.data(), &pool);
    next = (next + 1) % layers.size();
    benchmark::DoNotOptimize(down.data());
  }
  state.SetLabel(std::string(keel::tensor::dtype_name(type)) + " " + std::to_string(layers.size()) + " layers");
  state.counters["weight_GBps"] =
      benchmark::Counter(double(layer_bytes), benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    for (int threads : {1, 2}) {
      for (int cold : {0, 1}) {
        b->Args({int64_t(t), 2048, 5632, 1, threads, cold});
        b->Args({int64_t(t), 5632, 2048, 1, threads, cold});
      }
      // 8 rows: the decode step of 8 parallel sequences, weights cold (the step) and hot
      // (its arithmetic alone).
      b->Args({int64_t(t), 2048, 5632, 8, threads, 1});
      b->Args({int64_t(t), 2048, 5632, 8, threads, 0});
      b->Args({int64_t(t), 5632, 2048, 8, threads, 1});
      b->Args({int64_t(t), 2048, 5632, 64, threads, 0});
      b->Args({int64_t(t), 2048, 5632, 512, threads, 0});
    }
  }
  // f16 (matmul_half.h) at 8 rows: the parallel-8 decode step, cold and hot; the row
  // counts around the wide / scratch threshold (kScratchMinRows); and prefill.
  for (int threads : {1, 2}) {
    // 1 row: the single-sequence decode step, weights cold.
    b->Args({int64_t(DType::kF16), 2048, 5632, 1, threads, 1});
    b->Args({int64_t(DType::kF16), 5632, 2048, 1, threads, 1});
    b->Args({int64_t(DType::kF16), 2048, 5632, 8, threads, 1});
    b->Args({int64_t(DType::kF16), 2048, 5632, 8, threads, 0});
    b->Args({int64_t(DType::kF16), 5632, 2048, 8, threads, 1});
    for (int64_t rows : {16, 32, 48, 64}) b->Args({int64_t(DType::kF16), 2048, 5632, rows, threads, 0});
    b->Args({int64_t(DType::kF16), 2048, 128, 8, threads, 0});
    // Prefill (pp512): the up / gate, down and q / o, k / v projections.
    b->Args({int64_t(DType::kF16), 2048, 5632, 512, threads, 0});
    b->Args({int64_t(DType::kF16), 5632, 2048, 512, threads, 0});
    b->Args({int64_t(DType::kF16), 2048, 2048, 512, threads, 0});
    b->Args({int64_t(DType::kF16), 2048, 256, 512, threads, 0});
  }
}

// BF16: the pair-dot path (matmul_bf16dot.h) where the machine has AVX-512 BF16, else the
// widening one. Decode (1 row, cold), 8 parallel decodes (cold), prefill.
void Bf16Shapes(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    b->Args({int64_t(DType::kBF16), 2048, 5632, 1, threads, 1});
    b->Args({int64_t(DType::kBF16), 5632, 2048, 1, threads, 1});
    b->Args({int64_t(DType::kBF16), 2048, 5632, 8, threads, 1});
    b->Args({int64_t(DType::kBF16), 2048, 5632, 512, threads, 0});
    b->Args({int64_t(DType::kBF16), 5632, 2048, 512, threads, 0});
  }
}

BENCHMARK(BM_QMatmul)->Apply(Bf16Shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QMatmul)->Apply(Shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_DecodeLayers)
    ->ArgsProduct({{int64_t(DType::kQ4_0), int64_t(DType::kQ8_0), int64_t(DType::kQ4_K), int64_t(DType::kF16),
                   int64_t(DType::kBF16)},
                  {1, 2},
                  {96}})
    ->Args({int64_t(DType::kQ4_0), 2, 640})
    ->Args({int64_t(DType::kQ8_0), 2, 640})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
