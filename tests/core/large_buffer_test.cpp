#include "core/large_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

#include "core/error.h"
#include "support/sanitizer.h"

namespace keel {
namespace {

TEST(LargeBuffer, ReadsZeroAndHoldsWhatIsWrittenAtBothEnds) {
  // Odd size, more than one huge page: the tail is a partial page.
  const size_t bytes = (size_t{2} << 20) * 3 + 12345;
  LargeBuffer buf(bytes, "test buffer");
  ASSERT_NE(buf.data(), nullptr);
  EXPECT_EQ(buf.size(), bytes);
  EXPECT_EQ(buf.data()[0], 0);
  EXPECT_EQ(buf.data()[bytes / 2], 0);
  EXPECT_EQ(buf.data()[bytes - 1], 0);
  buf.data()[0] = 7;
  buf.data()[bytes - 1] = 9;
  EXPECT_EQ(buf.data()[0], 7);
  EXPECT_EQ(buf.data()[bytes - 1], 9);
  // Kernels load it with aligned 64-byte vectors.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % 64, 0u);
}

TEST(LargeBuffer, EmptyBufferHasNoStorage) {
  LargeBuffer empty(0, "empty");
  EXPECT_EQ(empty.size(), 0u);
  LargeBuffer defaulted;
  EXPECT_EQ(defaulted.data(), nullptr);
}

TEST(LargeBuffer, MoveTransfersOwnership) {
  LargeBuffer a(4096, "a");
  a.data()[100] = 42;
  uint8_t* const p = a.data();
  LargeBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[100], 42);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
  EXPECT_EQ(a.size(), 0u);
  LargeBuffer c(1000, "c");
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 4096u);
}

TEST(LargeBuffer, ImpossibleSizeIsAnOutOfMemoryErrorNamingTheBuffer) {
  try {
    LargeBuffer huge(SIZE_MAX - 10, "kv page pool");
    FAIL() << "expected keel::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("kv page pool"), std::string::npos) << e.what();
  }
}

// A committed buffer larger than the machine's memory is an error at once (the kernel's
// overcommit heuristic), not an OOM kill while it is filled. Only where the heuristic is on.
TEST(LargeBuffer, CommittedBufferBeyondMemoryIsRefused) {
#if defined(KEEL_TEST_ASAN)
  GTEST_SKIP() << "the sanitizer build's heap array";
#else
  std::ifstream mode("/proc/sys/vm/overcommit_memory");
  int overcommit = -1;
  if (!(mode >> overcommit) || overcommit != 0) GTEST_SKIP() << "overcommit mode " << overcommit;
  EXPECT_THROW(LargeBuffer(size_t{1} << 40, "packed weights", LargeBuffer::Commit::kNow), Error);  // 1 TiB
  // A reservation beyond memory (64 GiB) only takes address space.
  const size_t bytes = size_t{1} << 36;
  LargeBuffer reserved(bytes, "kv page pool", LargeBuffer::Commit::kOnFirstWrite);
  EXPECT_EQ(reserved.size(), bytes);
  reserved.data()[bytes - 1] = 1;  // one page backed
  EXPECT_EQ(reserved.data()[bytes - 1], 1);
#endif
}

TEST(LargeBuffer, ReportsTheHugePagePolicyAndUse) {
  const std::string mode = transparent_huge_pages_mode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode.empty()) << mode;
  std::ifstream sys("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (std::getline(sys, line)) {
    EXPECT_NE(line.find("[" + mode + "]"), std::string::npos) << line;
  }
  if (std::ifstream("/proc/self/smaps_rollup").good()) {
    EXPECT_GE(anon_huge_page_bytes(), 0);
  }
}

}  // namespace
}  // namespace keel
