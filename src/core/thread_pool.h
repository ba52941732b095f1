// ThreadPool — a persistent pool of worker threads that the engine thread drives for
// kernels. No threads are created per operation and nothing is allocated per job.
//
// Contract: parallel_for() is called from one thread at a time (the owner); it splits
// [0, n) into chunks of `grain` items (or shrinking "guided" chunks, JobOptions) handed out
// dynamically, runs fn(begin, end) on the
// workers and on the calling thread, and returns when all chunks are done. Which thread
// runs a chunk must not change results: kernels give each output element to exactly one
// chunk. An exception thrown by fn is captured, the remaining chunks still run, and the
// first exception is rethrown on the caller after all chunks end.
//
// Hand-off (decode issues ~10^3 small jobs per token, so this is the hot path): a job is
// published by bumping a sequence number the idle workers watch; they spin on it for a
// bounded time (ThreadPoolOptions::spin_us), then sleep on a futex, and are woken only if
// some worker is asleep. The caller takes chunks like any worker, so a worker that is slow
// to wake (descheduled on a busy machine) delays nothing unless it already took a chunk.
// No mutex on the hot path; a mutex is taken only to record an exception.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace keel {

struct ThreadPoolOptions {
  // How long an idle worker (and a caller waiting for the last chunk) spins before it
  // sleeps. Longer: cheaper back-to-back jobs; shorter: less CPU burnt between bursts.
  // Decode's serial gaps between jobs are a few µs; on a loaded machine a worker spinning
  // while the caller is descheduled only steals CPU (tg64 on the 1b q4_0 model under load
  // ~11: 200 µs gave 5.6-6.0 t/s wall, 50 µs 8.4-9.0, 20 µs 8.2-9.2).
  int spin_us = 50;
};

class ThreadPool {
 public:
  // n_threads counts the calling thread: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int n_threads, const ThreadPoolOptions& options = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Non-owning: fn must outlive the parallel_for call (a lambda argument does).
  using RangeFn = FunctionRef<void(int64_t begin, int64_t end)>;
  struct JobOptions {
    // Hit fault_point("kernel") first (core/fault.h): what lets fault injection land
    // inside a forward pass. Work outside a pass (packing at load) turns it off.
    bool fault_point = true;
    // Guided chunks: each chunk takes a share of what is left (remaining / (2 · threads)),
    // at most `grain` and at least `min_grain` items, so the chunks shrink toward the end
    // and the threads finish close together (with fixed chunks one thread can wait up to
    // a whole chunk for the other: ~5% of a decode step at 8 chunks a matrix). 0: fixed
    // chunks of `grain`. Which items a chunk holds changes; each item still runs once.
    int64_t min_grain = 0;
  };
  // Runs fn over [0, n) in chunks of at most `grain` items (grain < 1 counts as 1).
  void parallel_for(int64_t n, int64_t grain, RangeFn fn) { parallel_for(n, grain, fn, JobOptions{}); }
  void parallel_for(int64_t n, int64_t grain, RangeFn fn, const JobOptions& options);

  // Default pool sized from the machine (hardware threads), shared process-wide.
  static int default_threads();

 private:
  // One parallel_for's state. The owner writes the plain fields only while no worker is
  // checked in, then opens the job; a worker checks in, then reads `open`, so a job it
  // sees open stays intact until it checks out.
  struct alignas(64) Job {
    const RangeFn* fn = nullptr;
    int64_t n = 0;
    int64_t grain = 1;
    int64_t min_grain = 0;   // > 0: guided chunks (JobOptions::min_grain)
    int64_t divisor = 2;     // guided: a chunk is remaining / divisor
    std::exception_ptr error;  // the first exception, written under error_mutex_
    std::atomic<bool> open{false};
    std::atomic<int> checked_in{0};
    std::atomic<bool> owner_sleeping{false};
    std::atomic<uint32_t> done{0};                // futex word: 1 once pending reached 0
    alignas(64) std::atomic<int64_t> next{0};     // first item of the next chunk to take
    alignas(64) std::atomic<int64_t> pending{0};  // items not finished
  };

  void worker_loop();
  void run_chunks(Job& job);  // takes and runs chunks until none are left
  bool take_chunk(Job& job, int64_t& begin, int64_t& end);
  void wait_for_job(uint32_t seen);
  void wait_for_chunks(Job& job);

  int n_threads_;
  int64_t spin_ns_;
  std::vector<std::thread> workers_;

  alignas(64) std::atomic<uint32_t> job_seq_{0};  // bumped per job; futex word of idle workers
  std::atomic<int> sleepers_{0};                  // workers asleep on job_seq_
  std::atomic<bool> stop_{false};
  Job jobs_[2];  // job k uses jobs_[k % 2]
  std::mutex error_mutex_;
};

}  // namespace keel
