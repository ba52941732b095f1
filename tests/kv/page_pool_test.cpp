// PagePool: slice-major storage (slice s of consecutive page ids is one run of memory),
// zeroed slices on allocate, whole-page copies, and errors instead of aborts.
#include <cstdint>
#include <cstring>
#include <set>

#include <gtest/gtest.h>

#include "core/error.h"
#include "kv/page_pool.h"

namespace keel::kv {
namespace {

TEST(PagePool, SlicesOfConsecutivePagesAreAdjacentAndDisjoint) {
  constexpr size_t kSlice = 200;
  PagePool pool(5, kSlice, 3);
  EXPECT_EQ(pool.page_bytes(), 3 * kSlice);
  EXPECT_EQ(pool.slice_bytes(), kSlice);
  EXPECT_EQ(pool.n_slices(), 3);
  std::set<const uint8_t*> starts;
  for (PageId p = 0; p < 5; ++p) {
    for (int32_t s = 0; s < 3; ++s) starts.insert(pool.slice(p, s));
  }
  EXPECT_EQ(starts.size(), 15u);
  for (int32_t s = 0; s < 3; ++s) {
    for (PageId p = 0; p + 1 < 5; ++p) EXPECT_EQ(pool.slice(p + 1, s), pool.slice(p, s) + kSlice);
  }
  // The regions do not overlap: slice s + 1 of page 0 follows slice s of the last page.
  EXPECT_EQ(pool.slice(0, 1), pool.slice(4, 0) + kSlice);
}

TEST(PagePool, AllocateZeroesEverySliceAndLowestIdsComeFirst) {
  PagePool pool(3, 64, 4);
  const PageId a = pool.allocate();
  EXPECT_EQ(a, 0);
  for (int32_t s = 0; s < 4; ++s) std::memset(pool.slice(a, s), 0xAB, 64);
  pool.release(a);
  const PageId b = pool.allocate();
  EXPECT_EQ(b, 0);
  for (int32_t s = 0; s < 4; ++s) {
    for (size_t i = 0; i < 64; ++i) ASSERT_EQ(pool.slice(b, s)[i], 0) << "slice " << s << " byte " << i;
  }
  EXPECT_EQ(pool.allocate(), 1);
}

TEST(PagePool, ReleasedPagesComeBackLowestFirst) {
  PagePool pool(8, 16, 2);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(pool.allocate(), i);
  for (PageId p : {1, 2, 3, 4}) pool.release(p);  // a sequence's run, released in order
  for (PageId want : {1, 2, 3, 4, 6, 7}) EXPECT_EQ(pool.allocate(), want);
  EXPECT_EQ(pool.free_count(), 0);
  pool.release(5);
  pool.release(0);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 5);
}

TEST(PagePool, CopyPageCopiesEverySliceAndNothingElse) {
  PagePool pool(3, 32, 2);
  const PageId a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  for (int32_t s = 0; s < 2; ++s) std::memset(pool.slice(a, s), 10 + s, 32);
  std::memset(pool.slice(c, 0), 7, 32);
  pool.copy_page(b, a);
  for (int32_t s = 0; s < 2; ++s) {
    for (size_t i = 0; i < 32; ++i) ASSERT_EQ(pool.slice(b, s)[i], 10 + s);
  }
  for (size_t i = 0; i < 32; ++i) ASSERT_EQ(pool.slice(c, 0)[i], 7);
  EXPECT_THROW(pool.copy_page(b, 3), Error);
  EXPECT_THROW(pool.copy_page(-1, a), Error);
}

TEST(PagePool, RejectsBadSizesAndOverflow) {
  EXPECT_THROW(PagePool(1, 0, 1), Error);
  EXPECT_THROW(PagePool(1, 64, 0), Error);
  EXPECT_THROW(PagePool(-1, 64, 1), Error);
  EXPECT_THROW(PagePool(int64_t{1} << 40, size_t{1} << 30, 1 << 20), Error);
  PagePool empty(0, 64, 2);
  EXPECT_EQ(empty.capacity(), 0);
  EXPECT_THROW(empty.allocate(), Error);
}

}  // namespace
}  // namespace keel::kv
