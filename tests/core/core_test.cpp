#include <atomic>
#include <fstream>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/cpu.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "support/paths.h"

namespace keel {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 7, 64, 1001}) {
      for (int64_t grain : {1, 3, 16}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          ASSERT_LE(e - b, grain);
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST(ThreadPool, RethrowsFirstErrorAndStaysUsable) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(100, 1,
                                 [](int64_t b, int64_t) {
                                   if (b == 42) throw Error(ErrorCode::kInternal, "boom");
                                 }),
               Error);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, 7, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, ManySmallJobs) {
  ThreadPool pool(2);
  int64_t total = 0;
  for (int j = 0; j < 20000; ++j) {
    std::atomic<int64_t> s{0};
    pool.parallel_for(4, 1, [&](int64_t b, int64_t e) { s += e - b; });
    total += s.load();
  }
  EXPECT_EQ(total, 80000);
}

TEST(MappedFile, MapsAndReportsMissing) {
  std::string path = test::temp_dir() + "/mapped.bin";
  {
    std::ofstream f(path, std::ios::binary);
    f << "hello";
  }
  MappedFile m(path);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), m.size()), "hello");
  try {
    MappedFile missing(test::temp_dir() + "/nope.bin");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("nope.bin"), std::string::npos);
  }
}

TEST(MappedFile, ReadRangeCopiesTheFileBytes) {
  std::string path = test::temp_dir() + "/read_range.bin";
  std::string bytes;
  for (int i = 0; i < 10007; ++i) bytes.push_back(static_cast<char>(i * 31 + 7));
  {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
  }
  MappedFile m(path);
  ASSERT_EQ(m.size(), bytes.size());
  std::string out(5003, '\0');
  m.read_range(m.data() + 4099, out.size(), reinterpret_cast<uint8_t*>(out.data()));
  EXPECT_EQ(out, bytes.substr(4099, out.size()));
  m.read_range(m.data() + m.size(), 0, nullptr);  // an empty range reads nothing
  // Moved, it still reads its own file.
  MappedFile moved(std::move(m));
  moved.read_range(moved.data(), 1, reinterpret_cast<uint8_t*>(out.data()));
  EXPECT_EQ(out[0], bytes[0]);
  for (size_t at : {size_t(0), size_t(10000)}) {
    try {
      moved.read_range(moved.data() + at, 8, reinterpret_cast<uint8_t*>(out.data()));
      if (at == 10000) FAIL() << "expected an error for a range past the end";
    } catch (const Error& e) {
      EXPECT_EQ(at, 10000u) << e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
}

TEST(Cpu, DescribesFeatures) { EXPECT_FALSE(cpu_features().describe().empty()); }

}  // namespace
}  // namespace keel
