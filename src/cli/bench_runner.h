// The measurements behind `keel bench`: prompt processing (pp), generation (tg), each at a
// depth of tokens already cached, and aggregate generation of N parallel sequences —
// all through the model's forward pass and the paged KV cache, as the engine drives them.
//
// Contract: run_bench_test() does one warm-up run, then `reps` timed runs, and returns the
// tokens/s and the nanoseconds of each. Prompts (and depth prefixes) go through the model in
// forwards of at most `n_ubatch` tokens, as llama-bench's physical batch. Tokens are a fixed pseudo-random sequence (timing does not depend on
// the ids). The depth prefix is computed once and forked (copy-on-write) for every run.
// Throws keel::Error from the model or cache (e.g. a KV type the cache cannot hold).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"
#include "tensor/types.h"

namespace keel {
class ThreadPool;
}

namespace keel::cli {

// pp when only n_prompt > 0, tg when only n_gen > 0, pg (the prompt, then the generation,
// timed as one: llama-bench's -pg) when both are; at least one is.
struct BenchTest {
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_depth = 0;
  int64_t n_parallel = 1;  // sequences generating together (tg only; pp and pg use 1)
  std::string name() const;  // "pp512", "tg128", "pp512+tg128", "tg128 @ d4096", "tg128 x8"
};

struct BenchSettings {
  bool flash_attention = true;
  tensor::DType type_k = tensor::DType::kF16;
  tensor::DType type_v = tensor::DType::kF16;
  int reps = 5;
  int64_t n_ubatch = 512;  // most tokens per forward of a prompt or depth prefix
};

struct BenchResult {
  BenchTest test;
  std::vector<double> samples_ts;  // tokens/s per repetition (wall clock)
  // tokens / (process CPU seconds / threads) per repetition: what the run would reach with
  // its cores to itself; on a shared machine wall-clock figures fall, this one much less
  // (spin-waiting counts as CPU time, so it is a lower bound of the uncontended figure).
  std::vector<double> samples_cpu_ts;
  std::vector<double> samples_ns;  // wall-clock nanoseconds per repetition
  double avg_ts() const { return mean(samples_ts); }
  double stddev_ts() const { return stddev(samples_ts); }
  double avg_ns() const { return mean(samples_ns); }
  double stddev_ns() const { return stddev(samples_ns); }
  double avg_cpu_ts() const { return mean(samples_cpu_ts); }
  static double mean(const std::vector<double>& v);
  static double stddev(const std::vector<double>& v);  // sample (n - 1); 0 below 2 values
};

BenchResult run_bench_test(const model::Model& m, ThreadPool& pool, const BenchTest& test,
                           const BenchSettings& settings);

// Every test of `tests` prepared (depth prefix, warm-up) first, then the repetitions taken
// together, forward by forward: repetition i of every test runs its first forward (a prompt
// chunk or a generation step), then its second, and so on, each timed alone. A slow spell
// of a shared machine then lands on all tests alike, so ratios between them (depth 4096
// against depth 0, 8 streams against 1) hold where back-to-back runs drift by more than the
// ratio's own change. Results in the order of `tests`. Holds every test's cache at once.
std::vector<BenchResult> run_bench_tests_interleaved(const model::Model& m, ThreadPool& pool,
                                                     const std::vector<BenchTest>& tests,
                                                     const BenchSettings& settings);

}  // namespace keel::cli
