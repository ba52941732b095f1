// Element-wise kernel micro-benchmarks at TinyLlama-1.1B shapes (n_embd 2048, n_ff 5632,
// 32 heads × 64), for each ISA table this machine has (0 scalar, 1 avx2, 2 avx512), 64 rows
// (a prefill chunk) unless noted. Counter: elements per second.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/elementwise_isa.h"

namespace {

using keel::kernels::ElementwiseOps;

const ElementwiseOps* table(int64_t isa) {
  if (isa == 0) return &keel::kernels::elementwise_scalar_ops();
  return isa == 1 ? keel::kernels::elementwise_avx2_ops() : keel::kernels::elementwise_avx512_ops();
}

std::vector<float> normal(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Skips the run when the ISA is missing; otherwise labels it.
const ElementwiseOps* setup(benchmark::State& state) {
  const ElementwiseOps* ops = table(state.range(0));
  if (!ops) {
    state.SkipWithError("ISA not available");
    return nullptr;
  }
  static const char* kNames[] = {"scalar", "avx2", "avx512"};
  state.SetLabel(kNames[state.range(0)]);
  return ops;
}

void per_element(benchmark::State& state, int64_t n) {
  state.counters["elem/s"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
}

// args: isa, activation (0 silu_mul, 1 gelu_tanh_mul); 64 rows of n_ff.
void BM_GatedActivation(benchmark::State& state) {
  const ElementwiseOps* ops = setup(state);
  if (!ops) return;
  const auto fn = state.range(1) ? ops->gelu_tanh_mul : ops->silu_mul;
  const int64_t n = 64 * 5632;
  const auto g = normal(n, 1, 3.0f), u = normal(n, 2, 1.0f);
  std::vector<float> out(n);
  for (auto _ : state) {
    fn(g.data(), u.data(), n, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  per_element(state, n);
}

void BM_RmsNormRows(benchmark::State& state) {  // sum of squares + scale, 64 rows of 2048
  const ElementwiseOps* ops = setup(state);
  if (!ops) return;
  const int64_t d = 2048, rows = 64;
  const auto x = normal(d * rows, 3, 1.0f), w = normal(d, 4, 1.0f);
  std::vector<float> y(d * rows);
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; ++r) {
      const double ss = ops->sum_squares(x.data() + r * d, d);
      ops->scale_mul(x.data() + r * d, static_cast<float>(1.0 / (ss + 1.0)), w.data(), d,
                     y.data() + r * d);
    }
    benchmark::DoNotOptimize(y.data());
  }
  per_element(state, d * rows);
}

// args: isa, op (0 softmax, 1 softcap at 30); one row of 32000 (a vocabulary of logits).
void BM_LogitsRow(benchmark::State& state) {
  const ElementwiseOps* ops = setup(state);
  if (!ops) return;
  const int64_t n = 32000;
  const bool cap = state.range(1) != 0;
  const auto x = normal(n, 5, cap ? 10.0f : 4.0f);
  std::vector<float> y(n);
  for (auto _ : state) {
    y = x;
    if (cap) {
      ops->softcap(y.data(), n, 30.0f);
    } else {
      ops->softmax(y.data(), n);
    }
    benchmark::DoNotOptimize(y.data());
  }
  per_element(state, n);
}

void BM_AddInplace(benchmark::State& state) {
  const ElementwiseOps* ops = setup(state);
  if (!ops) return;
  const int64_t n = 64 * 2048;
  auto y = normal(n, 7, 1.0f);
  const auto x = normal(n, 8, 1e-6f);
  for (auto _ : state) {
    ops->add(y.data(), x.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  per_element(state, n);
}

// args: isa, mode (0 normal, 1 neox); 64 rows × 32 heads × 64 dims, full rotary.
void BM_RopeRotate(benchmark::State& state) {
  const ElementwiseOps* ops = setup(state);
  if (!ops) return;
  const auto mode = state.range(1) ? keel::kernels::RopeMode::kNeox : keel::kernels::RopeMode::kNormal;
  const int64_t rows = 64, heads = 32, hd = 64;
  auto x = normal(rows * heads * hd, 9, 1.0f);
  const auto c = normal(hd / 2, 10, 0.5f), s = normal(hd / 2, 11, 0.5f);
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; ++r) {
      ops->rope_rotate(x.data() + r * heads * hd, heads, hd, mode, hd, c.data(), s.data());
    }
    benchmark::DoNotOptimize(x.data());
  }
  per_element(state, rows * heads * hd);
}

void Isas(benchmark::internal::Benchmark* b) {
  for (int64_t isa : {0, 1, 2}) b->Arg(isa);
}

BENCHMARK(BM_GatedActivation)->ArgsProduct({{0, 1, 2}, {0, 1}});
BENCHMARK(BM_RmsNormRows)->Apply(Isas);
BENCHMARK(BM_LogitsRow)->ArgsProduct({{0, 1, 2}, {0, 1}});
BENCHMARK(BM_AddInplace)->Apply(Isas);
BENCHMARK(BM_RopeRotate)->ArgsProduct({{0, 1, 2}, {0, 1}});

}  // namespace
