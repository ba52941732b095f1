#include "core/thread_pool.h"

#include <algorithm>

#include "core/error.h"
#include "core/fault.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define KEEL_CPU_RELAX() _mm_pause()
#else
#define KEEL_CPU_RELAX() ((void)0)
#endif

namespace keel {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_atomic_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void ThreadPool::run_chunks() {
  for (;;) {
    int64_t begin = next_.fetch_add(grain_);
    if (begin >= n_) break;
    int64_t end = std::min(n_, begin + grain_);
    try {
      (*fn_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop(int /*index*/) {
  uint64_t seen = 0;
  for (;;) {
    // Spin briefly: decode issues many small jobs back to back, and a futex wake-up
    // costs more than the job.
    for (int spin = 0; spin < 20000 && generation_atomic_.load(std::memory_order_acquire) == seen;
         ++spin) {
      KEEL_CPU_RELAX();
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_chunks();
    if (active_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const RangeFn& fn) {
  // Every kernel of a forward pass comes through here: the fault-injection point that
  // lands "inside forward" (after some KV rows are written, before the commit).
  fault_point("kernel");
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (workers_.empty() || n <= grain) {
    for (int64_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  fn_ = &fn;
  n_ = n;
  grain_ = grain;
  next_.store(0);
  error_ = nullptr;
  active_workers_.store(static_cast<int>(workers_.size()));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    generation_atomic_.store(generation_, std::memory_order_release);
  }
  wake_.notify_all();
  run_chunks();
  // Wait for the workers to leave run_chunks (they may still hold fn_).
  for (int spin = 0; spin < 200000 && active_workers_.load(std::memory_order_acquire) > 0; ++spin) {
    KEEL_CPU_RELAX();
  }
  if (active_workers_.load(std::memory_order_acquire) > 0) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return active_workers_.load() == 0; });
  }
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace keel
