#include "cli/bench_roofline.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "kernels/matmul_bf16dot.h"
#include "kernels/qmatmul.h"
#include "kernels/roofline_probe.h"

namespace keel::cli {
namespace {

constexpr int64_t kDotIters = 20'000'000;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double wall_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Runs fn(thread index) once on every thread of the pool at the same time and returns the
// summed rate work / (CPU time of that thread): on a shared machine a thread's wall time
// includes time other processes ran, its CPU time does not.
template <typename Fn>
double rate_on_all(ThreadPool& pool, Fn fn) {
  std::vector<double> rates(static_cast<size_t>(pool.size()), 0.0);
  pool.parallel_for(pool.size(), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const double t0 = thread_cpu_seconds();
      const double work = fn(i);
      rates[static_cast<size_t>(i)] = work / std::max(1e-9, thread_cpu_seconds() - t0);
    }
  });
  double sum = 0;
  for (double r : rates) sum += r;
  return sum;
}

struct Buffer {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data;
  size_t bytes = 0;
};

// The read-probe buffer, its pages faulted in (by the threads that will read them).
Buffer read_buffer(ThreadPool& pool, size_t bytes) {
  Buffer b;
  b.bytes = std::max<size_t>(bytes / 4096 * 4096, 4096 * 16);
  b.data.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, b.bytes)));
  if (!b.data) {
    throw Error(ErrorCode::kOutOfMemory,
                "bench --roofline: cannot allocate the " + std::to_string(b.bytes >> 20) + " MiB read buffer");
  }
  // Distinct contents in every 8 bytes: pages with equal contents could be merged by the
  // host (KSM under a hypervisor) and then read from the cache instead of memory.
  const int64_t pages = static_cast<int64_t>(b.bytes / 4096);
  pool.parallel_for(pages, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      uint64_t* words = reinterpret_cast<uint64_t*>(b.data.get() + p * 4096);
      for (uint64_t i = 0; i < 512; ++i) words[i] = (static_cast<uint64_t>(p) * 512 + i) * 0x9e3779b97f4a7c15ull;
    }
  });
  return b;
}

// One pass: every thread reads its share of `segment` at the same moment (all wait at a
// start barrier; parallel_for's chunk count equals the thread count, so each chunk holds
// a thread of its own while it waits). Returns GB/s over the wall time from the first
// start to the last end, and whether every thread kept its CPU throughout.
struct Pass {
  double gbs = 0;
  bool clean = false;
};

Pass read_pass(ThreadPool& pool, const uint8_t* segment, size_t share, std::atomic<uint64_t>& sink) {
  const int n = pool.size();
  std::atomic<int> arrived{0};
  std::vector<double> start(static_cast<size_t>(n)), end(start), cpu(start);
  pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      arrived.fetch_add(1);
      while (arrived.load() < n) {
      }
      const double c0 = thread_cpu_seconds();
      start[i] = wall_seconds();
      sink += kernels::probe::read_bytes(segment + static_cast<size_t>(i) * share, share);
      end[i] = wall_seconds();
      cpu[i] = thread_cpu_seconds() - c0;
    }
  });
  const double t0 = *std::min_element(start.begin(), start.end());
  const double t1 = *std::max_element(end.begin(), end.end());
  Pass p;
  p.gbs = double(share) * n / std::max(1e-9, t1 - t0) / 1e9;
  p.clean = true;
  for (int i = 0; i < n; ++i) p.clean = p.clean && cpu[i] >= 0.9 * (end[i] - start[i]);
  return p;
}

}  // namespace

MachineRoofline measure_machine(ThreadPool& pool, const RooflineOptions& options) {
  MachineRoofline r;
  r.threads = pool.size();
  const Buffer buf = read_buffer(pool, options.read_bytes);
  // A pass reads 1/8 of the buffer, and consecutive passes read different eighths: what a
  // pass reads was last touched 7/8 of the buffer ago, long evicted from the caches.
  const size_t segment = buf.bytes / 8;
  const size_t share = segment / static_cast<size_t>(pool.size()) / 512 * 512;
  std::atomic<uint64_t> sink{0};
  double best_any = 0;
  for (int pass = 0; pass < std::max(1, options.read_passes); ++pass) {
    const Pass p = read_pass(pool, buf.data.get() + static_cast<size_t>(pass % 8) * segment, share, sink);
    best_any = std::max(best_any, p.gbs);
    r.read_passes_gbs.push_back(p.gbs);
    r.read_passes_clean.push_back(p.clean);
    if (p.clean) r.read_gbs = std::max(r.read_gbs, p.gbs);
  }
  if (r.read_clean_passes() == 0) r.read_gbs = best_any;
  auto peak = [&](uint64_t (*probe)(int64_t)) {
    return rate_on_all(pool, [&](int64_t) { return 2.0 * double(probe(kDotIters)); }) / 1e12;
  };
  r.int8_tops = peak(kernels::probe::int8_dot_macs);
  r.bf16_tflops = peak(kernels::probe::bf16_dot_macs);
  r.f32_tflops = peak(kernels::probe::f32_fma_macs);
  return r;
}

ModelBounds model_bounds(const model::Model& m, const MachineRoofline& machine) {
  ModelBounds b;
  const auto& tensors = m.file().tensors();
  const bool tied = m.file().find_tensor("output.weight") == nullptr;
  // The slowest arithmetic any matrix takes bounds the prompt: int8 dots (integer formats),
  // bf16 pair dots (BF16 where the machine has them), else f32.
  kernels::WeightMatrix bf16_probe;
  bf16_probe.type = tensor::DType::kBF16;
  const bool bf16_dot = kernels::bf16dot_available(bf16_probe);
  bool integer = true, f32 = false;
  for (const auto& t : tensors) {
    if (t.shape.size() < 2) continue;  // norms, biases: negligible
    const bool embd = t.name == "token_embd.weight";
    // The embedding is read one row per token unless it doubles as the output head.
    if (!embd || tied) {
      b.weight_bytes_per_token += double(t.n_bytes);
      b.flops_per_token += 2.0 * double(t.n_elements());
      if (!kernels::q::format_for(t.type)) {
        integer = false;
        if (!(t.type == tensor::DType::kBF16 && bf16_dot)) f32 = true;
      }
    }
  }
  b.tg_bound_ts = machine.read_gbs * 1e9 / b.weight_bytes_per_token;
  b.pp_path = integer ? "int8" : f32 ? "f32" : "bf16";
  const double peak = integer ? machine.int8_tops : f32 ? machine.f32_tflops : machine.bf16_tflops;
  b.pp_bound_ts = peak * 1e12 / b.flops_per_token;
  return b;
}

}  // namespace keel::cli
