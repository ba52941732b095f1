#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "core/fault.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__)
#include <immintrin.h>
#define KEEL_CPU_RELAX() _mm_pause()
#else
#define KEEL_CPU_RELAX() ((void)0)
#endif

namespace keel {
namespace {

// Sleeps while *word == expected (spurious returns allowed: callers re-check).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
#if defined(__linux__)
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
#else
  word.wait(expected);
#endif
}

void futex_wake_all(std::atomic<uint32_t>& word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
#else
  word.notify_all();
#endif
}

using Clock = std::chrono::steady_clock;

// Spins until done() or spin_ns have passed; returns done()'s last value. The clock is read
// every 64 pauses only (a pause is tens of cycles, a clock read more).
template <typename Done>
bool spin_until(Done done, int64_t spin_ns) {
  const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(spin_ns);
  for (uint32_t i = 1;; ++i) {
    if (done()) return true;
    KEEL_CPU_RELAX();
    if (i % 64 == 0 && Clock::now() >= deadline) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads, const ThreadPoolOptions& options)
    : n_threads_(std::max(1, n_threads)), spin_ns_(std::max(0, options.spin_us) * int64_t{1000}) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  job_seq_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(job_seq_);
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// The next chunk [begin, end) of `job`, or false when none is left.
bool ThreadPool::take_chunk(Job& job, int64_t& begin, int64_t& end) {
  if (job.min_grain <= 0) {
    begin = job.next.fetch_add(job.grain, std::memory_order_relaxed);
    end = std::min(job.n, begin + job.grain);
    return begin < job.n;
  }
  begin = job.next.load(std::memory_order_relaxed);
  for (;;) {
    if (begin >= job.n) return false;
    const int64_t size = std::clamp((job.n - begin) / job.divisor, job.min_grain, job.grain);
    end = std::min(job.n, begin + size);
    if (job.next.compare_exchange_weak(begin, end, std::memory_order_relaxed)) return true;
  }
}

void ThreadPool::run_chunks(Job& job) {
  int64_t begin = 0, end = 0;
  while (take_chunk(job, begin, end)) {
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!job.error) job.error = std::current_exception();
    }
    // The chunk's writes are released here; the owner acquires them from pending/done.
    if (job.pending.fetch_sub(end - begin, std::memory_order_acq_rel) == end - begin) {
      job.done.store(1, std::memory_order_seq_cst);
      if (job.owner_sleeping.load(std::memory_order_seq_cst)) futex_wake_all(job.done);
    }
  }
}

void ThreadPool::wait_for_job(uint32_t seen) {
  auto changed = [&] { return job_seq_.load(std::memory_order_acquire) != seen; };
  if (spin_until(changed, spin_ns_)) return;
  // Announce the sleep before the last check; the owner wakes only if it sees a sleeper
  // (both sides seq_cst, so one of them sees the other).
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  while (job_seq_.load(std::memory_order_seq_cst) == seen) futex_wait(job_seq_, seen);
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

void ThreadPool::wait_for_chunks(Job& job) {
  auto finished = [&] { return job.pending.load(std::memory_order_acquire) == 0; };
  if (spin_until(finished, spin_ns_)) return;
  job.owner_sleeping.store(true, std::memory_order_seq_cst);
  while (job.done.load(std::memory_order_seq_cst) == 0) futex_wait(job.done, 0);
  job.owner_sleeping.store(false, std::memory_order_relaxed);
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    wait_for_job(seen);
    if (stop_.load(std::memory_order_acquire)) return;
    seen = job_seq_.load(std::memory_order_acquire);
    Job& job = jobs_[seen % 2];
    // Check in, then look: the owner reuses a slot's fields only with nobody checked in,
    // so a job seen open stays intact until check-out (it may be a later job of the same
    // slot than `seen`; running its chunks is just as right).
    job.checked_in.fetch_add(1, std::memory_order_seq_cst);
    if (job.open.load(std::memory_order_seq_cst)) run_chunks(job);
    job.checked_in.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, RangeFn fn, const JobOptions& options) {
  // Every kernel of a forward pass comes through here: the fault-injection point that
  // lands "inside forward" (after some KV rows are written, before the commit).
  if (options.fault_point) fault_point("kernel");
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (workers_.empty() || n <= grain) {
    std::exception_ptr first;  // as on the pool: every chunk runs, the first error wins
    for (int64_t b = 0; b < n; b += grain) {
      try {
        fn(b, std::min(n, b + grain));
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
    return;
  }
  // Jobs alternate between two slots, so a worker still checking in on the previous job
  // (descheduled in between) never holds this one up; the slot's last use is two jobs
  // back, and its stragglers left long ago in all but pathological schedules.
  Job& job = jobs_[(job_seq_.load(std::memory_order_relaxed) + 1) % 2];
  while (job.checked_in.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  job.fn = &fn;
  job.n = n;
  job.grain = grain;
  job.min_grain = options.min_grain > 0 ? std::min(options.min_grain, grain) : 0;
  job.divisor = 2 * int64_t{n_threads_};
  job.next.store(0, std::memory_order_relaxed);
  job.pending.store(n, std::memory_order_relaxed);
  job.done.store(0, std::memory_order_relaxed);
  job.error = nullptr;
  job.open.store(true, std::memory_order_seq_cst);  // releases the fields above
  job_seq_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(job_seq_);

  run_chunks(job);
  wait_for_chunks(job);
  // Workers checking in from now on see the job closed and leave without touching it.
  job.open.store(false, std::memory_order_seq_cst);
  if (job.error) {
    std::exception_ptr e = std::move(job.error);
    job.error = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace keel
