// Matmul micro-benchmarks at TinyLlama-1.1B shapes (n_embd 2048, n_ff 5632): decode (1 row)
// and prefill (64 rows) per weight type and path, on 1 and 2 threads. Counters: weight
// GB/s read (decode) and int8 GOPS (prefill).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_path.h"
#include "tensor/types.h"

namespace {

using keel::kernels::MatmulPath;
using keel::tensor::DType;

struct Fixture {
  std::vector<uint8_t> data;
  keel::kernels::WeightMatrix w;
  std::vector<float> x, y;
  Fixture(DType type, int64_t n_in, int64_t n_out, int64_t n_rows) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 0.5f);
    const size_t rb = keel::tensor::row_bytes(type, n_in);
    data.resize(rb * n_out);
    std::vector<float> row(n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      for (auto& v : row) v = nd(rng);
      keel::tensor::quantize_row(type, row.data(), data.data() + o * rb, n_in);
    }
    w = keel::kernels::WeightMatrix::packed(type, data.data(), n_in, n_out);
    x.resize(n_in * n_rows);
    for (auto& v : x) v = nd(rng);
    y.resize(n_out * n_rows);
  }
};

// args: type, n_in, n_out, n_rows, threads, path
void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t n_in = state.range(1), n_out = state.range(2), n_rows = state.range(3);
  Fixture f(type, n_in, n_out, n_rows);
  keel::ThreadPool pool(static_cast<int>(state.range(4)));
  keel::kernels::ScopedMatmulPath path(static_cast<MatmulPath>(state.range(5)));
  keel::kernels::matmul(f.w, f.x.data(), n_rows, f.y.data(), &pool);  // packs
  for (auto _ : state) {
    keel::kernels::matmul(f.w, f.x.data(), n_rows, f.y.data(), &pool);
    benchmark::DoNotOptimize(f.y.data());
  }
  state.SetLabel(std::string(keel::tensor::dtype_name(type)) + " " +
                 keel::kernels::matmul_path_name(static_cast<MatmulPath>(state.range(5))));
  state.counters["weight_GBps"] = benchmark::Counter(double(f.data.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GOPS"] = benchmark::Counter(2.0 * n_in * n_out * n_rows / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    for (int64_t rows : {1, 64}) {
      for (int threads : {1, 2}) {
        b->Args({int64_t(t), 2048, 5632, rows, threads, int64_t(MatmulPath::kAuto)});
      }
    }
    b->Args({int64_t(t), 2048, 2048, 1, 1, int64_t(MatmulPath::kReference)});
  }
  b->Args({int64_t(DType::kF16), 2048, 2048, 1, 1, int64_t(MatmulPath::kAuto)});
  // f16 / bf16 (matmul_half.h): decode and prefill, 1 and 2 threads.
  for (DType t : {DType::kF16, DType::kBF16}) {
    for (int64_t rows : {1, 64}) {
      for (int threads : {1, 2}) b->Args({int64_t(t), 2048, 5632, rows, threads, int64_t(MatmulPath::kAuto)});
    }
  }
}

BENCHMARK(BM_Matmul)->Apply(Shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Decode from memory, not cache: one activation row through `n_mats` distinct 2048 x 5632
// matrices in turn (about 200-400 MB for 32 of them, well past the last-level cache), as a
// decode step walks its layers. weight_GBps here is what `--roofline`'s read bandwidth bounds.
// args: type, n_mats, threads
void BM_MatmulFromMemory(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t n_mats = state.range(1);
  std::vector<std::unique_ptr<Fixture>> mats;
  for (int64_t i = 0; i < n_mats; ++i) mats.push_back(std::make_unique<Fixture>(type, 2048, 5632, 1));
  keel::ThreadPool pool(static_cast<int>(state.range(2)));
  for (auto& f : mats) keel::kernels::matmul(f->w, f->x.data(), 1, f->y.data(), &pool);  // packs
  for (auto _ : state) {
    for (auto& f : mats) {
      keel::kernels::matmul(f->w, f->x.data(), 1, f->y.data(), &pool);
      benchmark::DoNotOptimize(f->y.data());
    }
  }
  state.SetLabel(keel::tensor::dtype_name(type));
  state.counters["weight_GBps"] = benchmark::Counter(double(mats[0]->data.size() * n_mats),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_MatmulFromMemory)
    ->ArgsProduct({{int64_t(DType::kQ4_0), int64_t(DType::kQ8_0), int64_t(DType::kQ4_K), int64_t(DType::kF16)}, {32}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
