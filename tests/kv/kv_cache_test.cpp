// KvCache basics: construction checks, reserve/write/commit/rollback, views, accounting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "tensor/q8_tile.h"
#include "kv_test_util.h"

namespace keel::kv::test {
namespace {

using tensor::DType;

constexpr DType kAllTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                               DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1};

// Largest error of a stored value relative to the row's largest magnitude.
double tolerance(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1e-3;
    case DType::kBF16: return 8e-3;
    case DType::kQ8_0: return 1e-2;
    case DType::kQ5_0: case DType::kQ5_1: return 7e-2;
    default: return 0.15;
  }
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no keel::Error thrown";
  return ErrorCode::kInternal;
}

TEST(KvCache, RejectsInvalidLayoutAndOptions) {
  const KvOptions ok = test_options(DType::kF16, DType::kF16);
  EXPECT_EQ(code_of([&] { KvCache c(make_layout({}), ok); }), ErrorCode::kInvalidArgument);
  KvLayout bad_heads = make_layout({0});
  bad_heads.n_kv_heads = 0;
  EXPECT_EQ(code_of([&] { KvCache c(bad_heads, ok); }), ErrorCode::kInvalidArgument);
  KvOptions bad_page = ok;
  bad_page.page_tokens = 0;
  EXPECT_EQ(code_of([&] { KvCache c(make_layout({0}), bad_page); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { KvCache c(make_layout({0, -1}), ok); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { KvCache c(make_layout({0}), test_options(DType::kQ4_K, DType::kF16)); }),
            ErrorCode::kUnsupported);
  // Block types need head_dim % 32 == 0, K and V checked independently.
  KvLayout small = make_layout({0});
  small.head_dim_k = 16;
  try {
    KvCache c(small, test_options(DType::kQ8_0, DType::kQ8_0));
    FAIL() << "q8_0 K with head_dim 16 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("multiple of 32"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(KvCache c(small, test_options(DType::kF16, DType::kQ8_0)));
}

class KvTypes : public ::testing::TestWithParam<std::tuple<DType, DType>> {};

TEST_P(KvTypes, RowsReadBackThroughViewsWithinTypeError) {
  const auto [kt, vt] = GetParam();
  KvCache c(make_layout({0, 0, 0}), test_options(kt, vt, 4));
  const SeqId s = c.create();
  append_rows(c, s, 3, 100);  // chunks that end inside pages
  append_rows(c, s, 6, 100);
  append_rows(c, s, 1, 100);
  ASSERT_EQ(c.length(s), 10);
  c.check_invariants();
  for (int32_t l = 0; l < 3; ++l) {
    const KvLayerView v = c.view(s, l);
    ASSERT_EQ(v.n_positions, 10);
    for (int64_t p = 0; p < 10; ++p) {
      for (bool is_v : {false, true}) {
        const auto want = make_row(100 + p, l, is_v);
        const auto got = view_row(v, p, is_v);
        ASSERT_TRUE(same_bits(got, stored(is_v ? vt : kt, want))) << "layer " << l << " pos " << p;
        double max_abs = 0, max_err = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          max_abs = std::max(max_abs, double(std::fabs(want[i])));
          max_err = std::max(max_err, double(std::fabs(want[i] - got[i])));
        }
        EXPECT_LE(max_err, tolerance(is_v ? vt : kt) * max_abs) << "pos " << p;
        std::vector<float> direct(kRowElems);
        (is_v ? c.read_v(s, l, p, direct.data()) : c.read_k(s, l, p, direct.data()));
        EXPECT_TRUE(same_bits(direct, got));
      }
    }
  }
}

std::vector<std::tuple<DType, DType>> type_pairs() {
  std::vector<std::tuple<DType, DType>> out;
  for (DType k : kAllTypes) {
    for (DType v : kAllTypes) out.emplace_back(k, v);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllPairs, KvTypes, ::testing::ValuesIn(type_pairs()),
                         [](const auto& info) {
                           return std::string(tensor::dtype_name(std::get<0>(info.param))) + "_" +
                                  tensor::dtype_name(std::get<1>(info.param));
                         });

TEST(KvCache, RollbackDiscardsAndCommitKeepsPrefix) {
  KvCache c(make_layout({0, 0}), test_options(DType::kF32, DType::kF32, 4));
  const SeqId s = c.create();
  append_rows(c, s, 5, 1);
  c.reserve(s, 6);
  EXPECT_EQ(c.reserved(s), 6);
  EXPECT_EQ(c.view(s, 0).n_positions, 11);  // the forward pass sees the reserved range
  c.write_k(s, 0, 5, make_row(999, 0, false).data());
  // While reserved, the sequence cannot be edited.
  EXPECT_EQ(code_of([&] { c.truncate(s, 2); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.reserve(s, 1); }), ErrorCode::kInvalidArgument);
  c.check_invariants();
  c.rollback(s);
  EXPECT_EQ(c.length(s), 5);
  EXPECT_EQ(c.view(s, 0).n_positions, 5);
  EXPECT_EQ(c.view(s, 0).k_pages.size(), 2u);
  c.check_invariants();
  // Committing part of a reservation keeps that part.
  c.reserve(s, 4);
  for (int64_t p = 5; p < 9; ++p) {
    for (int32_t l = 0; l < 2; ++l) {
      c.write_k(s, l, p, make_row(1 + p, l, false).data());
      c.write_v(s, l, p, make_row(1 + p, l, true).data());
    }
  }
  c.commit(s, 2);
  EXPECT_EQ(c.length(s), 7);
  c.check_invariants();
  std::vector<float> row(kRowElems);
  c.read_k(s, 1, 6, row.data());
  EXPECT_TRUE(same_bits(row, make_row(7, 1, false)));
  EXPECT_EQ(code_of([&] { c.read_k(s, 1, 7, row.data()); }), ErrorCode::kInvalidArgument);
}

TEST(KvCache, WritesOutsideTheReservationAreRejected) {
  KvCache c(make_layout({0}), test_options(DType::kF16, DType::kF16));
  const SeqId s = c.create();
  const auto row = make_row(1, 0, false);
  EXPECT_EQ(code_of([&] { c.write_k(s, 0, 0, row.data()); }), ErrorCode::kInvalidArgument);
  append_rows(c, s, 3, 0);
  c.reserve(s, 2);
  EXPECT_EQ(code_of([&] { c.write_k(s, 0, 2, row.data()); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.write_v(s, 0, 5, row.data()); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.write_v(s, 1, 3, row.data()); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.commit(s, 3); }), ErrorCode::kInvalidArgument);
  EXPECT_NO_THROW(c.write_v(s, 0, 4, row.data()));
}

TEST(KvCache, BadSequenceIdsThrow) {
  KvCache c(make_layout({0}), test_options(DType::kF16, DType::kF16));
  EXPECT_EQ(code_of([&] { c.length(0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.length(-1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.view(99, 0); }), ErrorCode::kInvalidArgument);
  const SeqId s = c.create();
  EXPECT_EQ(code_of([&] { c.view(s, 1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { c.reserve(s, -1); }), ErrorCode::kInvalidArgument);
  c.release(s);
  EXPECT_EQ(code_of([&] { c.release(s); }), ErrorCode::kInvalidArgument);
  for (int i = 0; i < 4; ++i) c.create();
  EXPECT_EQ(code_of([&] { c.create(); }), ErrorCode::kBusy);
  c.check_invariants();
}

TEST(KvCache, ExhaustedPoolThrowsAndLeavesStateUnchanged) {
  // 16 tokens + 4 sequences of slack = 8 pages of 4 tokens.
  KvCache c(make_layout({0}), test_options(DType::kF16, DType::kF16, 4, 16));
  const SeqId a = c.create();
  append_rows(c, a, 30, 0);
  EXPECT_EQ(c.usage().pages_used[0], 8);
  const SeqId b = c.create();
  try {
    c.reserve(b, 1);
    FAIL() << "reserve succeeded on a full pool";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("free pages"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.length(b), 0);
  EXPECT_EQ(c.reserved(b), 0);
  EXPECT_EQ(c.length(a), 30);
  c.check_invariants();
  c.release(a);
  EXPECT_NO_THROW(c.reserve(b, 32));
  c.check_invariants();
}

TEST(KvCache, BytesPerTokenAndPoolsAreExact) {
  const KvLayout l = make_layout({0, 8, 0, 8});  // 2 full + 2 sliding layers, 64 elems/row
  EXPECT_EQ(KvCache::bytes_per_token(l, DType::kF16, DType::kF16), 4u * (128 + 128));
  EXPECT_EQ(KvCache::bytes_per_token(l, DType::kQ8_0, DType::kQ8_0), 4u * (68 + 68));
  EXPECT_EQ(KvCache::bytes_per_token(l, DType::kQ4_0, DType::kQ4_0), 4u * (36 + 36));
  EXPECT_EQ(KvCache::bytes_per_token(l, DType::kQ8_0, DType::kQ4_0), 4u * (68 + 36));
  KvOptions o = test_options(DType::kQ8_0, DType::kQ4_0, 32, 1000);
  o.max_sequences = 2;
  o.window_slack_tokens = 8;
  o.max_batch_tokens = 64;
  const KvMemoryPlan p = KvCache::plan(l, o);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].window, 0);
  EXPECT_EQ(p.groups[0].layers, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(p.groups[0].bytes_per_token, 2u * (68 + 36));
  EXPECT_EQ(p.groups[0].pages, 32 + 2);  // ceil(1000 / 32) + one partial page per sequence
  EXPECT_EQ(p.groups[1].window, 8);
  // Per sequence ceil((8 + 8) / 32) + 2 pages, plus ceil(64 / 32) for a batch in flight.
  EXPECT_EQ(p.groups[1].pages, 2 * 3 + 2);
  EXPECT_EQ(p.groups[1].page_bytes, 32u * 2 * (68 + 36));
  EXPECT_EQ(p.pool_bytes, p.groups[0].pool_bytes + p.groups[1].pool_bytes);
  EXPECT_EQ(p.groups[1].pool_bytes, 8u * 32 * 2 * (68 + 36));
  KvCache c(l, o);
  EXPECT_EQ(c.pool_bytes(), p.pool_bytes);
}

// The numbers the closing note quotes: TinyLlama-1.1B shapes (make-model's 1b
// preset): 22 layers, 4 kv heads of 64.
TEST(KvCache, BytesPerTokenOfThe1bPreset) {
  KvLayout l;
  l.layer_window.assign(22, 0);
  l.n_kv_heads = 4;
  l.head_dim_k = l.head_dim_v = 64;
  EXPECT_EQ(KvCache::bytes_per_token(l, DType::kF16, DType::kF16), 22528u);   // 22 KiB
  EXPECT_EQ(KvCache::bytes_per_token(l, DType::kQ8_0, DType::kQ8_0), 11968u);  // 8 x 34 B rows
  EXPECT_EQ(KvCache::bytes_per_token(l, DType::kQ4_0, DType::kQ4_0), 6336u);   // 8 x 18 B rows
  KvOptions o;
  o.k_type = o.v_type = DType::kQ8_0;
  o.max_tokens = 2048;
  o.max_sequences = 1;
  o.page_tokens = 32;
  // 2048 tokens in 64 pages plus one page of per-sequence slack.
  EXPECT_EQ(KvCache::plan(l, o).pool_bytes, 65u * 32 * 11968);
}

// q8_0 is stored as tiles per kv head (kv::KvLayerView::k_tiles / v_pairs): K when the page
// size is a multiple of 16, V when it is even. The view says so, and rows read back as q8_0
// rows would, through the view and read_k / read_v; other page sizes keep rows.
TEST(KvCache, Q8_0LiesInTilesWhenThePageSizeAllows) {
  for (int32_t page : {16, 4, 3}) {
    KvCache c(make_layout({0, 0}), test_options(DType::kQ8_0, DType::kQ8_0, page));
    const SeqId s = c.create();
    append_rows(c, s, 37, 3);
    const KvLayerView v = c.view(s, 1);
    EXPECT_EQ(v.k_tiles, page % 16 == 0);
    EXPECT_EQ(v.v_pairs, page % 2 == 0);
    EXPECT_EQ(v.k_head_bytes, v.k_tiles ? tensor::q8_tile::tile_bytes(tensor::q8_tile::key_groups(page, v.head_dim_k)) : 34u);
    EXPECT_EQ(v.v_head_bytes, v.v_pairs ? tensor::q8_tile::tile_bytes(tensor::q8_tile::value_pairs(page, v.head_dim_v)) : 34u);
    std::vector<float> row(static_cast<size_t>(v.n_kv_heads * v.head_dim_v));
    for (int64_t p = 0; p < 37; ++p) {
      c.read_v(s, 1, p, row.data());
      EXPECT_EQ(view_row(v, p, true), row) << "page " << page << " position " << p;
      c.read_k(s, 1, p, row.data());
      EXPECT_EQ(view_row(v, p, false), row) << "page " << page << " position " << p;
    }
  }
}

TEST(KvCache, ViewDescribesPagesAndWindow) {
  KvCache c(make_layout({0, 8}), test_options(DType::kQ8_0, DType::kF16, 4));
  const SeqId s = c.create();
  append_rows(c, s, 30, 7);
  const KvLayerView full = c.view(s, 0);
  EXPECT_EQ(full.window, 0);
  EXPECT_EQ(full.first_held, 0);
  EXPECT_EQ(full.k_pages.size(), 8u);
  EXPECT_EQ(full.k_token_stride, 68u);
  EXPECT_EQ(full.k_head_bytes, 34u);
  EXPECT_EQ(full.v_token_stride, 128u);
  EXPECT_EQ(full.v_head_bytes, 64u);
  const KvLayerView swa = c.view(s, 1);
  EXPECT_EQ(swa.window, 8);
  // Held from keep_from(30) = 30 - 8 - 4 = 18, i.e. page 4 (position 16) on.
  EXPECT_EQ(swa.first_held, 16);
  EXPECT_EQ(swa.k_pages[3], nullptr);
  EXPECT_NE(swa.k_pages[4], nullptr);
  EXPECT_LE(swa.first_held, 30 - 8);  // position 29 sees keys 22..29
  c.check_invariants();
}

}  // namespace
}  // namespace keel::kv::test
