// The pool's hand-off: many tiny jobs back to back (spinning and sleeping workers), chunk
// results visible to the caller, exceptions from any thread, the fault point, and no heap
// allocation per call.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <cstdlib>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/fault.h"
#include "core/thread_pool.h"

// Counts every allocation of this test binary, so a test can prove a code path makes none.
#include "support/count_allocations.h"

namespace keel {
namespace {

// Spin budgets that exercise both hand-offs: 0 puts every idle worker to sleep on the
// futex between jobs, 1000 µs keeps them spinning.
const int kSpins[] = {0, 1000};

// Runs body(pool) on pools of 1, 2 and 3 threads with each spin budget; failures name the pool.
template <class Body>
void on_every_pool(const Body& body) {
  for (int threads : {1, 2, 3}) {
    for (int spin : kSpins) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " spin " + std::to_string(spin));
      ThreadPoolOptions o;
      o.spin_us = spin;
      ThreadPool pool(threads, o);
      body(pool);
    }
  }
}

TEST(ThreadPoolHandOff, ManyTinyJobsCoverEveryItemOnce) {
  on_every_pool([](ThreadPool& pool) {
    // Plain (non-atomic) writes: the caller must see every chunk's writes on return.
    std::vector<int> hits(97);
    for (int job = 0; job < 3000; ++job) {
      const int64_t n = 1 + job % 97, grain = 1 + job % 5;
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i] += 1;
      });
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[i], 1) << "job " << job << " item " << i;
        hits[i] = 0;
      }
    }
  });
}

TEST(ThreadPoolHandOff, GuidedChunksCoverEveryItemOnceWithinTheirBounds) {
  on_every_pool([](ThreadPool& pool) {
    std::vector<int> hits(301);
    std::vector<int64_t> sizes(301);  // sizes[b]: the chunk that began at b (0: none)
    for (int job = 0; job < 2000; ++job) {
      const int64_t n = 1 + job % 301, grain = 1 + job % 40;
      ThreadPool::JobOptions guided;
      guided.min_grain = 1 + job % 7;  // may exceed grain: then grain bounds both
      pool.parallel_for(
          n, grain,
          [&](int64_t b, int64_t e) {
            sizes[b] = e - b;
            for (int64_t i = b; i < e; ++i) hits[i] += 1;
          },
          guided);
      const int64_t lo = std::min(guided.min_grain, grain);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[i], 1) << "job " << job << " item " << i;
        hits[i] = 0;
        if (sizes[i] == 0) continue;
        ASSERT_LE(sizes[i], grain) << "job " << job << " chunk at " << i;
        // Only the last chunk may be shorter than the floor (it holds what was left).
        if (i + sizes[i] < n) {
          ASSERT_GE(sizes[i], lo) << "job " << job << " chunk at " << i;
        }
        sizes[i] = 0;
      }
    }
  });
}

TEST(ThreadPoolHandOff, GuidedChunksShrinkTowardTheEnd) {
  // Chunks go out in order of position, whichever thread takes them: each is
  // (what is left) / (2 · threads), clamped to [min_grain, grain].
  ThreadPool pool(2);
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  ThreadPool::JobOptions guided;
  guided.min_grain = 4;
  pool.parallel_for(
      1000, 250,
      [&](int64_t b, int64_t e) {
        std::lock_guard<std::mutex> lock(m);
        chunks.emplace_back(b, e);
      },
      guided);
  std::sort(chunks.begin(), chunks.end());
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks.front(), std::make_pair(int64_t{0}, int64_t{250}));  // 1000 / 4
  EXPECT_EQ(chunks[1], std::make_pair(int64_t{250}, int64_t{437}));     // 750 / 4 = 187
  for (size_t i = 1; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].first, chunks[i - 1].second);
    EXPECT_LE(chunks[i].second - chunks[i].first, chunks[i - 1].second - chunks[i - 1].first);
  }
  EXPECT_EQ(chunks.back().second, 1000);
  EXPECT_LE(chunks.back().second - chunks.back().first, 4);
}

TEST(ThreadPoolHandOff, WorkersTakeChunks) {
  // Chunks long enough that a waiting worker gets some: the job really is shared.
  ThreadPoolOptions o;
  o.spin_us = 1000;
  ThreadPool pool(2, o);
  std::atomic<int> on_workers{0};
  for (int job = 0; job < 20000 && on_workers.load() == 0; ++job) {
    const auto caller = std::this_thread::get_id();
    pool.parallel_for(8, 1, [&](int64_t, int64_t) {
      volatile double x = 0;
      for (int i = 0; i < 20000; ++i) x = x + 1.0;
      if (std::this_thread::get_id() != caller) on_workers.fetch_add(1);
    });
  }
  EXPECT_GT(on_workers.load(), 0);
}

TEST(ThreadPoolHandOff, ExceptionsFromAnyThreadAreRethrownAfterAllChunks) {
  on_every_pool([](ThreadPool& pool) {
    for (int job = 0; job < 200; ++job) {
      std::atomic<int64_t> ran{0};
      const int64_t throw_at = job % 50;
      try {
        pool.parallel_for(50, 1, [&](int64_t b, int64_t) {
          ran.fetch_add(1);
          // Several chunks throw; exactly one exception comes out.
          if (b == throw_at || b == 49) throw Error(ErrorCode::kInternal, "chunk " + std::to_string(b));
        });
        FAIL() << "no exception";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("chunk"), std::string::npos);
      }
      EXPECT_EQ(ran.load(), 50) << "every chunk runs even after one threw";
      // The pool stays usable and no stale error leaks into the next job.
      std::atomic<int64_t> sum{0};
      pool.parallel_for(10, 3, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) sum += i;
      });
      ASSERT_EQ(sum.load(), 45);
    }
  });
}

TEST(ThreadPoolHandOff, FaultPointFiresBeforeAnyChunk) {
  ThreadPool pool(2);
  FaultConfig c;
  c.site = "kernel";
  c.probability = 1.0;
  fault_configure(c);
  int ran = 0;
  EXPECT_THROW(pool.parallel_for(10, 1, [&](int64_t, int64_t) { ++ran; }), Error);
  EXPECT_EQ(ran, 0);
  // Work outside a forward pass opts out of the point.
  ThreadPool::JobOptions no_fault;
  no_fault.fault_point = false;
  std::atomic<int> outside{0};
  pool.parallel_for(10, 1, [&](int64_t, int64_t) { outside.fetch_add(1); }, no_fault);
  fault_disable();
  EXPECT_EQ(outside.load(), 10);
  std::atomic<int> after{0};
  pool.parallel_for(10, 1, [&](int64_t, int64_t) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 10);
}

TEST(ThreadPoolHandOff, NoAllocationPerCall) {
  ThreadPool pool(3);
  // A capture larger than std::function's small buffer: a std::function would allocate.
  std::vector<int64_t> out(64);
  int64_t a = 1, b = 2, c = 3, d = 4;
  auto body = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = a + b + c + d + i;
  };
  pool.parallel_for(64, 4, body);  // warm-up
  const int64_t before = test::allocation_count();
  for (int job = 0; job < 1000; ++job) {
    pool.parallel_for(64, 1 + job % 7, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] = a + b + c + d + i;
    });
  }
  EXPECT_EQ(test::allocation_count(), before);
  EXPECT_EQ(out[63], 10 + 63);
}

TEST(ThreadPoolHandOff, DestroysWithSleepingOrSpinningWorkers) {
  for (int spin : kSpins) {
    for (int i = 0; i < 50; ++i) {
      ThreadPoolOptions o;
      o.spin_us = spin;
      ThreadPool pool(3, o);
      if (i % 2) {
        std::atomic<int> n{0};
        pool.parallel_for(5, 1, [&](int64_t, int64_t) { n.fetch_add(1); });
        ASSERT_EQ(n.load(), 5);
      }
    }
  }
}

}  // namespace
}  // namespace keel
