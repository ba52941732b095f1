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
#include "kernels/qmatmul.h"
#include "kernels/roofline_probe.h"

namespace keel::cli {
namespace {

constexpr size_t kReadBytes = size_t{1} << 30;  // far beyond any cache
constexpr int kReadPasses = 5;
constexpr int64_t kDotIters = 20'000'000;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

}  // namespace

MachineRoofline measure_machine(ThreadPool& pool) {
  MachineRoofline r;
  r.threads = pool.size();
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> buf(static_cast<uint8_t*>(std::aligned_alloc(64, kReadBytes)));
  if (!buf) throw Error(ErrorCode::kOutOfMemory, "bench --roofline: cannot allocate the 1 GiB read buffer");
  const size_t slice = kReadBytes / static_cast<size_t>(pool.size()) / 256 * 256;
  pool.parallel_for(pool.size(), 1, [&](int64_t b, int64_t e) {  // first touch on the reading thread
    for (int64_t i = b; i < e; ++i) {
      for (size_t j = 0; j < slice; j += 4096) buf.get()[i * slice + j] = static_cast<uint8_t>(j);
    }
  });
  std::atomic<uint64_t> sink{0};
  for (int pass = 0; pass < kReadPasses; ++pass) {
    const double rate = rate_on_all(pool, [&](int64_t i) {
      sink += kernels::probe::read_bytes(buf.get() + i * slice, slice);
      return double(slice);
    });
    r.read_gbs = std::max(r.read_gbs, rate / 1e9);
  }
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
  bool integer = true;
  for (const auto& t : tensors) {
    if (t.shape.size() < 2) continue;  // norms, biases: negligible
    const bool embd = t.name == "token_embd.weight";
    // The embedding is read one row per token unless it doubles as the output head.
    if (!embd || tied) {
      b.weight_bytes_per_token += double(t.n_bytes);
      b.flops_per_token += 2.0 * double(t.n_elements());
      if (!kernels::q::format_for(t.type)) integer = false;
    }
  }
  b.tg_bound_ts = machine.read_gbs * 1e9 / b.weight_bytes_per_token;
  b.pp_path = integer ? "int8" : "f32";
  const double peak = integer ? machine.int8_tops : machine.f32_tflops;
  b.pp_bound_ts = peak * 1e12 / b.flops_per_token;
  return b;
}

}  // namespace keel::cli
