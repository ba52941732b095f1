// Fork, truncate, shift and sliding-window groups on known rows.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv_test_util.h"

namespace keel::kv::test {
namespace {

using tensor::DType;


// Every held position of every layer reads back the row keyed key_of(p).
template <typename KeyOf>
void expect_rows(const KvCache& c, SeqId s, KeyOf key_of) {
  const int64_t len = c.length(s);
  for (int32_t l = 0; l < c.layout().n_layers(); ++l) {
    const KvLayerView v = c.view(s, l);
    ASSERT_EQ(v.n_positions, len);
    if (len > 0) {
      ASSERT_LE(v.first_held, std::max<int64_t>(0, len - v.window)) << "layer " << l;
    }
    for (int64_t p = v.first_held; p < len; ++p) {
      for (bool is_v : {false, true}) {
        const auto want = stored(is_v ? c.options().v_type : c.options().k_type,
                                 make_row(key_of(p), l, is_v));
        ASSERT_TRUE(same_bits(view_row(v, p, is_v), want))
            << "seq " << s << " layer " << l << " pos " << p << (is_v ? " V" : " K");
      }
    }
  }
}

TEST(KvEdit, ForkSharesPagesAndCopiesTheDivergingPage) {
  KvCache c(make_layout({0, 0}), test_options(DType::kQ8_0, DType::kF16, 4));
  const SeqId a = c.create();
  append_rows(c, a, 10, 0);
  const int64_t used = c.usage().pages_used[0];
  const SeqId b = c.fork(a, 6);  // inside page 1
  EXPECT_EQ(c.length(b), 6);
  EXPECT_EQ(c.usage().pages_used[0], used);  // nothing copied yet
  c.check_invariants();
  append_rows(c, b, 5, 1000);  // writes positions 6..10: page 1 is copied first
  EXPECT_EQ(c.usage().copied_pages, 1);
  c.check_invariants();
  expect_rows(c, a, [](int64_t p) { return p; });
  expect_rows(c, b, [](int64_t p) { return p < 6 ? p : 1000 + p; });
  // Releasing the source keeps the fork's shared pages alive.
  c.release(a);
  c.check_invariants();
  expect_rows(c, b, [](int64_t p) { return p < 6 ? p : 1000 + p; });
}

TEST(KvEdit, ForkAtZeroAndAtTheEnd) {
  KvCache c(make_layout({0}), test_options(DType::kF16, DType::kF16, 4));
  const SeqId a = c.create();
  append_rows(c, a, 8, 0);  // ends on a page boundary
  const SeqId empty = c.fork(a, 0);
  const SeqId whole = c.fork(a, 8);
  EXPECT_EQ(c.length(empty), 0);
  EXPECT_EQ(c.length(whole), 8);
  append_rows(c, whole, 3, 50);  // a new page, no copy needed
  EXPECT_EQ(c.usage().copied_pages, 0);
  append_rows(c, empty, 2, 70);
  c.check_invariants();
  expect_rows(c, a, [](int64_t p) { return p; });
  expect_rows(c, whole, [](int64_t p) { return p < 8 ? p : 50 + p; });
  expect_rows(c, empty, [](int64_t p) { return 70 + p; });
  EXPECT_THROW(c.fork(a, 9), Error);
}

TEST(KvEdit, TruncateInsideAPageAtZeroAndAtTheEnd) {
  KvCache c(make_layout({0, 0, 0}), test_options(DType::kQ4_0, DType::kQ5_1, 4));
  const SeqId a = c.create();
  append_rows(c, a, 13, 0);
  EXPECT_EQ(c.truncate(a, 13), 13);
  EXPECT_EQ(c.truncate(a, 6), 6);
  EXPECT_EQ(c.view(a, 2).k_pages.size(), 2u);
  c.check_invariants();
  append_rows(c, a, 4, 500);  // overwrites the rest of page 1 and starts page 2
  expect_rows(c, a, [](int64_t p) { return p < 6 ? p : 500 + p; });
  EXPECT_EQ(c.truncate(a, 0), 0);
  EXPECT_EQ(c.usage().pages_used[0], 0);
  c.check_invariants();
  append_rows(c, a, 2, 900);
  expect_rows(c, a, [](int64_t p) { return 900 + p; });
  EXPECT_THROW(c.truncate(a, 3), Error);
  EXPECT_THROW(c.truncate(a, -1), Error);
}

TEST(KvEdit, SlidingGroupHoldsWindowPlusSlackOnly) {
  // Layers 0, 2 full; 1, 3 window 8; page 4; slack 4.
  KvCache c(make_layout({0, 8, 0, 8}), test_options(DType::kF16, DType::kQ8_0, 4));
  const SeqId a = c.create();
  for (int i = 0; i < 10; ++i) append_rows(c, a, 4, 0);
  ASSERT_EQ(c.length(a), 40);
  // keep_from(40) = 40 - 8 - 4 = 28: pages 7..9 of the sliding group are held.
  EXPECT_EQ(c.view(a, 1).first_held, 28);
  EXPECT_EQ(c.usage().pages_used[1], 3);
  EXPECT_EQ(c.usage().pages_used[0], 10);
  c.check_invariants();
  expect_rows(c, a, [](int64_t p) { return p; });
}

TEST(KvEdit, TruncateKeepsEveryGroupOnOneLength) {
  // Incident 002: after `rm [p0, end)` the full and sliding caches disagreed by one token
  // and a query row came out fully masked. Here every truncate point either is served by
  // every group or returns the longest length all groups serve.
  for (int32_t page : {4, 16, 32}) {
    for (int32_t window : {8, 16}) {
      for (int64_t cut = 0; cut <= 100; cut += page == 4 ? 1 : 3) {
        KvCache c(make_layout({0, window, window, 0}),
                  test_options(DType::kQ8_0, DType::kQ8_0, page, 512, 6));
        const SeqId a = c.create();
        append_rows(c, a, 57, 0);
        append_rows(c, a, 43, 0);
        const int64_t first_held = c.view(a, 1).first_held;
        const int64_t got = c.truncate(a, cut);
        // Served exactly when the sliding group still holds [cut - window, cut).
        EXPECT_EQ(got, first_held <= std::max<int64_t>(0, cut - window) ? cut : 0) << "cut " << cut;
        if (cut >= 100 - 6) {
          EXPECT_EQ(got, cut) << "within the slack";
        }
        c.check_invariants();
        for (int32_t l = 0; l < 4; ++l) EXPECT_EQ(c.view(a, l).n_positions, got);
        append_rows(c, a, 5, 777);
        c.check_invariants();
        expect_rows(c, a, [got](int64_t p) { return p < got ? p : 777 + p; });
      }
    }
  }
}

// Pages of 16 hold q8_0 K and V as tiles (kv::KvLayerView::k_tiles / v_pairs): the shift
// moves and re-rotates rows inside them the same way.
TEST(KvEdit, ShiftRenumbersAndReRotatesK) {
  for (int32_t page : {4, 16}) {
    for (DType vt : {DType::kQ5_0, DType::kQ8_0}) {
      for (DType kt : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_1}) {
        KvCache c(make_layout({0, 0}), test_options(kt, vt, page));
        const SeqId a = c.create();
        append_rows(c, a, 21, 0);
        EXPECT_EQ(c.shift(a, 2, 5, test_rotate), 16);
        EXPECT_EQ(c.length(a), 16);
        c.check_invariants();
        for (int32_t l = 0; l < 2; ++l) {
          const KvLayerView v = c.view(a, l);
          for (int64_t q = 0; q < 16; ++q) {
            const int64_t p = q < 2 ? q : q + 5;
            auto k = stored(kt, make_row(p, l, false));
            if (q >= 2) {
              test_rotate(l, k.data(), 1, -5);  // dequantize → rotate → requantize
              k = stored(kt, k);
            }
            EXPECT_TRUE(same_bits(view_row(v, q, false), k))
                << tensor::dtype_name(kt) << "/" << tensor::dtype_name(vt) << " page " << page << " q " << q;
            EXPECT_TRUE(same_bits(view_row(v, q, true), stored(vt, make_row(p, l, true))))
                << tensor::dtype_name(kt) << "/" << tensor::dtype_name(vt) << " page " << page << " q " << q;
          }
        }
        // Appending after a shift continues at the new length.
        append_rows(c, a, 3, 100);
        c.check_invariants();
      }
    }
  }
}

TEST(KvEdit, ShiftRotatesOnlyTheRopeDimensions) {
  KvCache c(make_layout({0}), test_options(DType::kF32, DType::kF32, 8));
  const SeqId a = c.create();
  append_rows(c, a, 20, 0);
  c.shift(a, 1, 9, test_rotate);
  std::vector<float> got(kRowElems);
  c.read_k(a, 0, 5, got.data());
  const auto orig = make_row(14, 0, false);
  for (int64_t h = 0; h < kHeads; ++h) {
    for (int64_t i = kRopeDims; i < kHeadDim; ++i) {
      EXPECT_EQ(got[h * kHeadDim + i], orig[h * kHeadDim + i]) << "non-rotary dim changed";
    }
  }
  EXPECT_NE(got[0], orig[0]);
}

TEST(KvEdit, ShiftSucceedsOnAFullPool) {
  // Context shift runs exactly when the context is full: it must not need a second copy.
  KvCache c(make_layout({0, 8}), test_options(DType::kQ8_0, DType::kQ8_0, 4, 28));
  const SeqId a = c.create();
  append_rows(c, a, 44, 0);  // the full group's 11 pages (28 tokens + 4 sequences' slack) used
  ASSERT_EQ(c.usage().pages_used[0], c.usage().pages_total[0]);
  EXPECT_EQ(c.shift(a, 4, 14, test_rotate), 30);
  c.check_invariants();
  append_rows(c, a, 14, 50);
  c.check_invariants();
}

TEST(KvEdit, ShiftOnSlidingGroups) {
  // Rows move across page boundaries, so the slack must cover a page for the renumbered
  // window to be held in whole pages.
  for (int32_t page : {4, 16}) {
    KvCache c(make_layout({0, 8}), test_options(DType::kF32, DType::kF32, page, 512, page));
    const SeqId a = c.create();
    append_rows(c, a, 60, 0);
    const int64_t len = c.shift(a, 3, 30, test_rotate);
    EXPECT_EQ(len, 30);
    c.check_invariants();
    // Sliding rows near the end are the moved, rotated rows.
    std::vector<float> got(kRowElems);
    c.read_k(a, 1, 29, got.data());
    auto want = make_row(59, 1, false);
    test_rotate(1, want.data(), 1, -30);
    EXPECT_TRUE(same_bits(got, want));
    append_rows(c, a, 9, 0);
    c.check_invariants();
  }
}

TEST(KvEdit, ShiftThatLosesTheWindowFallsBackToTheKeptPrefix) {
  // Window 8, slack 0, page 4: at length 40 the sliding group holds [32, 40). Dropping two
  // positions would need new [22, 30) = old [24, 32): gone. The kept prefix is not held
  // either, so the caller recomputes from 0.
  KvCache c(make_layout({0, 8}), test_options(DType::kF16, DType::kF16, 4, 256, 0));
  const SeqId a = c.create();
  append_rows(c, a, 40, 0);
  EXPECT_EQ(c.shift(a, 20, 2, test_rotate), 0);
  EXPECT_EQ(c.view(a, 0).n_positions, 0);
  EXPECT_EQ(c.view(a, 1).n_positions, 0);
  c.check_invariants();
}

TEST(KvEdit, ThrowingRotatorEmptiesTheSequenceConsistently) {
  KvCache c(make_layout({0, 0}), test_options(DType::kQ8_0, DType::kF16, 4));
  const SeqId a = c.create();
  append_rows(c, a, 20, 0);
  const SeqId b = c.fork(a, 12);
  auto bad = [](int32_t, float*, int64_t, int64_t) { throw std::runtime_error("rope failed"); };
  EXPECT_THROW(c.shift(a, 2, 4, bad), std::runtime_error);
  EXPECT_EQ(c.length(a), 0);
  c.check_invariants();
  expect_rows(c, b, [](int64_t p) { return p; });
  EXPECT_THROW(c.shift(b, 2, 4, KRotator{}), Error);
}

}  // namespace
}  // namespace keel::kv::test
