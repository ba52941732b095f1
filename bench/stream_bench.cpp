// The memory's read rate as a decode step can use it: a pure read (the roofline probe's loop,
// no arithmetic) of a 1 GiB buffer in pool jobs of `job` KiB, each split into 18 KiB tasks
// (a q4_0 panel of a 2048-wide matrix) handed out in guided chunks as the integer matmul
// driver does, the job ending when both threads are done. A 1b q4_0 decode step is 89
// such jobs of 2.3-13 MiB (o, q/k/v, down, gate/up) and one of 52 MiB (the output).
// Compare weight_GBps with `keel bench --roofline` (one contiguous half per thread, the best
// of several 128 MiB passes) and with BM_DecodeLayers/*/2/640 (the same jobs with the
// arithmetic): the gap to the first is what the step's structure costs, the gap to the
// second what the arithmetic costs.
// args: job KiB, threads
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>

#include "core/large_buffer.h"
#include "core/thread_pool.h"
#include "kernels/roofline_probe.h"

namespace {

constexpr size_t kBufferBytes = size_t(1) << 30;
constexpr int64_t kTaskBytes = 18432;

void BM_StreamRead(benchmark::State& state) {
  const int64_t job_bytes = state.range(0) << 10;
  keel::ThreadPool pool(static_cast<int>(state.range(1)));
  keel::LargeBuffer buf(kBufferBytes, "stream benchmark buffer");
  std::memset(buf.data(), 1, kBufferBytes);
  const int64_t tasks_per_job = std::max<int64_t>(1, job_bytes / kTaskBytes);
  const int64_t jobs = static_cast<int64_t>(kBufferBytes) / (tasks_per_job * kTaskBytes);
  keel::ThreadPool::JobOptions options;
  options.min_grain = std::max<int64_t>(1, tasks_per_job / 64);
  const int64_t grain = std::max<int64_t>(options.min_grain, tasks_per_job / (2 * pool.size()));
  uint64_t sink = 0;
  for (auto _ : state) {
    for (int64_t j = 0; j < jobs; ++j) {
      const uint8_t* base = buf.data() + j * tasks_per_job * kTaskBytes;
      pool.parallel_for(
          tasks_per_job, grain,
          [&](int64_t b, int64_t e) {
            const uint64_t s = keel::kernels::probe::read_bytes(base + b * kTaskBytes, static_cast<size_t>((e - b) * kTaskBytes));
            __atomic_fetch_xor(&sink, s, __ATOMIC_RELAXED);
          },
          options);
    }
  }
  benchmark::DoNotOptimize(sink);
  state.counters["weight_GBps"] = benchmark::Counter(double(jobs * tasks_per_job * kTaskBytes),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_StreamRead)
    ->ArgsProduct({{131072, 13312, 2304, 576}, {2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
