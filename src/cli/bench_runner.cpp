#include "cli/bench_runner.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"

namespace keel::cli {
namespace {

using Clock = std::chrono::steady_clock;

int32_t token_at(int64_t i, int64_t n_vocab) {
  // A fixed scramble of positions into ids (skipping the first few specials).
  const uint64_t h = static_cast<uint64_t>(i + 1) * 0x9e3779b97f4a7c15ull;
  return static_cast<int32_t>(3 + (h >> 33) % static_cast<uint64_t>(n_vocab - 3));
}

kv::KvOptions cache_options(const BenchTest& t, const BenchSettings& s) {
  kv::KvOptions o;
  o.k_type = s.type_k;
  o.v_type = s.type_v;
  const int64_t per_seq = t.n_depth + t.n_prompt + t.n_gen + 64;
  // Depth prefix + one forked run alive at a time (the prefix pages are shared).
  o.max_tokens = per_seq * (t.n_parallel + 1) + 256;
  o.max_sequences = static_cast<int32_t>(t.n_parallel + 2);
  const int64_t ub = s.n_ubatch;
  o.max_batch_tokens = std::max<int64_t>({std::min(t.n_prompt, ub), t.n_parallel, std::min(t.n_depth, ub), 1});
  return o;
}

// Runs tokens [first, first + n) of `seq` in one forward; logits only for the last.
void prefill(const model::Model& m, kv::KvCache& kv, ThreadPool& pool, kv::SeqId seq, int64_t first,
             int64_t n, const model::ForwardOptions& fo) {
  std::vector<model::BatchEntry> batch;
  batch.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    batch.push_back({token_at(first + i, m.n_vocab()), kv.length(seq) + i, seq, i + 1 == n});
  }
  m.forward(batch, kv, pool, fo);
}

// Tokens [first, first + n) in forwards of at most `chunk` (the cache's batch limit).
void prefill_chunked(const model::Model& m, kv::KvCache& kv, ThreadPool& pool, kv::SeqId seq, int64_t first,
                     int64_t n, int64_t chunk, const model::ForwardOptions& fo) {
  for (int64_t done = 0; done < n; done += chunk) prefill(m, kv, pool, seq, first + done, std::min(chunk, n - done), fo);
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct Rates {
  double wall_ts, cpu_ts, wall_ns;
};

Rates run_once(const model::Model& m, kv::KvCache& kv, ThreadPool& pool, kv::SeqId base,
               const BenchTest& t, const BenchSettings& settings, const model::ForwardOptions& fo) {
  std::vector<kv::SeqId> seqs;
  for (int64_t s = 0; s < t.n_parallel; ++s) {
    seqs.push_back(t.n_depth > 0 ? kv.fork(base, t.n_depth) : kv.create());
  }
  const auto start = Clock::now();
  const double cpu_start = process_cpu_seconds();
  int64_t tokens = 0;
  if (t.n_prompt > 0) {
    prefill_chunked(m, kv, pool, seqs[0], t.n_depth, t.n_prompt, settings.n_ubatch, fo);
    tokens = t.n_prompt;
  }
  if (t.n_gen > 0) {
    std::vector<model::BatchEntry> batch(seqs.size());
    std::vector<float> logits;  // kept across steps, as a server's engine keeps it
    for (int64_t step = 0; step < t.n_gen; ++step) {
      for (size_t s = 0; s < seqs.size(); ++s) {
        const int64_t pos = kv.length(seqs[s]);
        batch[s] = {token_at(pos + 7 * static_cast<int64_t>(s), m.n_vocab()), pos, seqs[s], true};
      }
      m.forward(batch, kv, pool, fo, &logits);
    }
    tokens += t.n_gen * static_cast<int64_t>(seqs.size());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = (process_cpu_seconds() - cpu_start) / pool.size();
  for (kv::SeqId s : seqs) kv.release(s);
  return {static_cast<double>(tokens) / seconds, static_cast<double>(tokens) / cpu, seconds * 1e9};
}

}  // namespace

std::string BenchTest::name() const {
  std::string s;
  if (n_prompt > 0) s = "pp" + std::to_string(n_prompt);
  if (n_gen > 0) s += (s.empty() ? "tg" : "+tg") + std::to_string(n_gen);
  if (n_depth > 0) s += " @ d" + std::to_string(n_depth);
  if (n_parallel > 1) s += " x" + std::to_string(n_parallel);
  return s;
}

double BenchResult::mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

double BenchResult::stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

BenchResult run_bench_test(const model::Model& m, ThreadPool& pool, const BenchTest& test,
                           const BenchSettings& settings) {
  if (test.n_prompt < 0 || test.n_gen < 0 || test.n_prompt + test.n_gen == 0 || test.n_depth < 0 ||
      test.n_parallel < 1 || (test.n_prompt > 0 && test.n_parallel != 1) || settings.reps < 1 ||
      settings.n_ubatch < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "bench: a test has a prompt, a generation or both, depth >= 0, parallel >= 1 (1 with a prompt), "
                "reps >= 1 and ubatch >= 1");
  }
  kv::KvCache kv(m.kv_layout(), cache_options(test, settings));
  model::ForwardOptions fo;
  fo.flash_attention = settings.flash_attention;
  kv::SeqId base = -1;
  if (test.n_depth > 0) {
    base = kv.create();
    prefill_chunked(m, kv, pool, base, 0, test.n_depth, settings.n_ubatch, fo);
  }
  BenchResult r;
  r.test = test;
  run_once(m, kv, pool, base, test, settings, fo);  // warm-up: page faults, packing, caches
  for (int i = 0; i < settings.reps; ++i) {
    const Rates rates = run_once(m, kv, pool, base, test, settings, fo);
    r.samples_ts.push_back(rates.wall_ts);
    r.samples_ns.push_back(rates.wall_ns);
    r.samples_cpu_ts.push_back(rates.cpu_ts);
  }
  return r;
}

}  // namespace keel::cli
