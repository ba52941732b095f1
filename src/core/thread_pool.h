// ThreadPool — a persistent pool of worker threads that the engine thread drives for
// kernels. No threads are created per operation.
//
// Contract: parallel_for() is called from one thread at a time (the owner); it splits
// [0, n) into chunks handed out dynamically, runs fn(begin, end) on the workers and on the
// calling thread, and returns when all chunks are done. Which thread runs a chunk must not
// change results: kernels give each output element to exactly one chunk. An exception
// thrown by fn is captured and the first one rethrown on the caller after all chunks end.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace keel {

class ThreadPool {
 public:
  // n_threads counts the calling thread: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  using RangeFn = std::function<void(int64_t begin, int64_t end)>;
  // Runs fn over [0, n) in chunks of at most `grain` items (grain >= 1).
  void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

  // Default pool sized from the machine (hardware threads), shared process-wide.
  static int default_threads();

 private:
  void worker_loop(int index);
  void run_chunks();

  int n_threads_;
  std::vector<std::thread> workers_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;  // guarded by mutex_; bumped per job
  std::atomic<uint64_t> generation_atomic_{0};
  bool stop_ = false;

  // Current job (valid while a parallel_for is in flight).
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_workers_{0};
  std::exception_ptr error_;
  std::mutex error_mutex_;
};

}  // namespace keel
