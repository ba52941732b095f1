#include "cli/bench_runner.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

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

namespace {

// One test's cache, with its depth prefix computed and one warm-up run done (page faults,
// packing, caches); then timed repetitions, each taken a forward at a time (start, step until
// it returns false, finish) so that several tests can take turns forward by forward.
class PreparedTest {
 public:
  PreparedTest(const model::Model& m, ThreadPool& pool, const BenchTest& test, const BenchSettings& settings)
      : m_(m), pool_(pool), settings_(settings), kv_(m.kv_layout(), cache_options(checked(test, settings), settings)) {
    result_.test = test;
    fo_.flash_attention = settings.flash_attention;
    if (test.n_depth > 0) {
      base_ = kv_.create();
      prefill_chunked(m, kv_, pool, base_, 0, test.n_depth, settings.n_ubatch, fo_);
    }
    start();  // the warm-up, untimed
    while (step()) {
    }
    release();
  }

  // A repetition: fresh sequences (forked from the depth prefix), no forward run yet.
  void start() {
    const BenchTest& t = result_.test;
    for (int64_t s = 0; s < t.n_parallel; ++s) seqs_.push_back(t.n_depth > 0 ? kv_.fork(base_, t.n_depth) : kv_.create());
    prompt_done_ = gen_done_ = 0;
    wall_s_ = cpu_s_ = 0;
  }

  // Runs the repetition's next forward (a prompt chunk of at most n_ubatch tokens, or one
  // generation step of every sequence), timed alone; false once none is left.
  bool step() {
    const BenchTest& t = result_.test;
    if (prompt_done_ == t.n_prompt && gen_done_ == t.n_gen) return false;
    const auto start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    if (prompt_done_ < t.n_prompt) {
      const int64_t n = std::min(settings_.n_ubatch, t.n_prompt - prompt_done_);
      prefill(m_, kv_, pool_, seqs_[0], t.n_depth + prompt_done_, n, fo_);
      prompt_done_ += n;
    } else {
      batch_.resize(seqs_.size());
      for (size_t s = 0; s < seqs_.size(); ++s) {
        const int64_t pos = kv_.length(seqs_[s]);
        batch_[s] = {token_at(pos + 7 * static_cast<int64_t>(s), m_.n_vocab()), pos, seqs_[s], true};
      }
      m_.forward(batch_, kv_, pool_, fo_, &logits_);
      ++gen_done_;
    }
    wall_s_ += std::chrono::duration<double>(Clock::now() - start).count();
    cpu_s_ += (process_cpu_seconds() - cpu_start) / pool_.size();
    return prompt_done_ < t.n_prompt || gen_done_ < t.n_gen;
  }

  // Ends a timed repetition: its rates join the result.
  void finish() {
    const BenchTest& t = result_.test;
    const double tokens = static_cast<double>(t.n_prompt + t.n_gen * t.n_parallel);
    result_.samples_ts.push_back(tokens / wall_s_);
    result_.samples_ns.push_back(wall_s_ * 1e9);
    result_.samples_cpu_ts.push_back(tokens / cpu_s_);
    release();
  }

  const BenchResult& result() const { return result_; }

 private:
  // `test` when it is one run_bench_test() takes; throws before its cache is sized otherwise.
  static const BenchTest& checked(const BenchTest& test, const BenchSettings& settings) {
    if (test.n_prompt < 0 || test.n_gen < 0 || test.n_prompt + test.n_gen == 0 || test.n_depth < 0 ||
        test.n_parallel < 1 || (test.n_prompt > 0 && test.n_parallel != 1) || settings.reps < 1 ||
        settings.n_ubatch < 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "bench: a test has a prompt, a generation or both, depth >= 0, parallel >= 1 (1 with a prompt), "
                  "reps >= 1 and ubatch >= 1");
    }
    return test;
  }

  void release() {
    for (kv::SeqId s : seqs_) kv_.release(s);
    seqs_.clear();
  }

  const model::Model& m_;
  ThreadPool& pool_;
  BenchSettings settings_;
  kv::KvCache kv_;
  model::ForwardOptions fo_;
  kv::SeqId base_ = -1;
  std::vector<kv::SeqId> seqs_;
  std::vector<model::BatchEntry> batch_;
  std::vector<float> logits_;  // kept across steps, as a server's engine keeps it
  int64_t prompt_done_ = 0, gen_done_ = 0;
  double wall_s_ = 0, cpu_s_ = 0;
  BenchResult result_;
};

}  // namespace

BenchResult run_bench_test(const model::Model& m, ThreadPool& pool, const BenchTest& test,
                           const BenchSettings& settings) {
  PreparedTest t(m, pool, test, settings);
  for (int i = 0; i < settings.reps; ++i) {
    t.start();
    while (t.step()) {
    }
    t.finish();
  }
  return t.result();
}

std::vector<BenchResult> run_bench_tests_interleaved(const model::Model& m, ThreadPool& pool,
                                                     const std::vector<BenchTest>& tests,
                                                     const BenchSettings& settings) {
  std::vector<std::unique_ptr<PreparedTest>> prepared;
  for (const BenchTest& t : tests) prepared.push_back(std::make_unique<PreparedTest>(m, pool, t, settings));
  for (int i = 0; i < settings.reps; ++i) {
    for (auto& t : prepared) t->start();
    for (bool more = true; more;) {  // a forward of each test in turn
      more = false;
      for (auto& t : prepared) more = t->step() || more;
    }
    for (auto& t : prepared) t->finish();
  }
  std::vector<BenchResult> results;
  for (const auto& t : prepared) results.push_back(t->result());
  return results;
}

}  // namespace keel::cli
