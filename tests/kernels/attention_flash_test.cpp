// Flash attention's SIMD tile kernels against the scalar twin, bitwise (attention_flash.h):
// every KV type the kernels read directly plus one that is widened first, odd head
// dimensions, GQA groups of 1..12, page sizes that are not multiples of 16, windows, sinks,
// softcap and NaN. Also: a row's result does not depend on the batch or the view's length
// (as when the prompt arrives in chunks), for every ISA.
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/attention_fixture.h"
#include "kernels/attention_flash.h"
#include "tensor/types.h"

namespace keel::kernels {
namespace {

using attn_test::FakeLayer;
using detail::FlashIsa;
using tensor::DType;

struct FlashCase {
  DType kt, vt;
  int64_t group, n_kv, dk, dv;
  int32_t pt, window;
  float softcap;
  bool sinks;
};

std::string describe(const FlashCase& c) {
  return std::string(tensor::dtype_name(c.kt)) + "/" + tensor::dtype_name(c.vt) + " group " +
         std::to_string(c.group) + " n_kv " + std::to_string(c.n_kv) + " dk " + std::to_string(c.dk) +
         " dv " + std::to_string(c.dv) + " pt " + std::to_string(c.pt) + " window " +
         std::to_string(c.window) + (c.softcap > 0 ? " softcap" : "") + (c.sinks ? " sinks" : "");
}

void PrintTo(const FlashCase& c, std::ostream* os) { *os << describe(c); }

// Same value or both NaN (NaN payloads are not part of the definition).
bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

struct Fixture {
  FakeLayer f;
  std::vector<int64_t> pos;
  std::vector<float> q, sinks;
  AttentionParams p;
  int64_t n_head;

  Fixture(const FlashCase& c, int64_t n_pos, uint32_t seed)
      : f(n_pos, c.n_kv, c.dk, c.dv, c.pt, c.kt, c.vt, seed), n_head(c.group * c.n_kv) {
    f.view.window = c.window;
    if (c.window > 0) f.drop_below(std::max<int64_t>(0, n_pos - c.window - c.pt));
    const int64_t first_q = c.window > 0 ? f.view.first_held + c.window - 1 : 0;
    for (int64_t x = first_q; x < n_pos; ++x) pos.push_back(x);
    std::mt19937 rng(seed + 1);
    std::normal_distribution<float> d(0.0f, 1.5f);  // wide enough that maxima move across tiles
    q.resize(pos.size() * n_head * c.dk);
    for (auto& x : q) x = d(rng);
    for (int64_t h = 0; h < n_head; ++h) sinks.push_back(0.7f * float(h % 5) - 1.1f);
    p.n_head = n_head;
    p.scale = 1.0f / std::sqrt(float(c.dk));
    p.softcap = c.softcap;
    p.sinks = c.sinks ? sinks.data() : nullptr;
    p.flash = true;
  }
  int64_t n_q() const { return static_cast<int64_t>(pos.size()); }
  int64_t out_stride() const { return n_head * f.dv; }

  // Row r alone; with `view_ends_at_row` over a view whose last position is the row's own
  // (as when it is decoded token by token or ends a prompt chunk).
  std::vector<float> attend_row(FlashIsa isa, int64_t r, ThreadPool* pool, bool view_ends_at_row) {
    detail::ScopedFlashIsa scoped(isa);
    kv::KvLayerView view = f.view;
    if (view_ends_at_row) view.n_positions = pos[r] + 1;
    const kv::KvLayerView* vp = &view;
    std::vector<float> out(out_stride());
    attention(&q[r * n_head * f.dk], &pos[r], &vp, 1, p, out.data(), pool);
    return out;
  }
  bool row_equals(const std::vector<float>& row, const std::vector<float>& batch, int64_t r) const {
    return std::memcmp(row.data(), &batch[r * out_stride()], sizeof(float) * out_stride()) == 0;
  }

  std::vector<float> attend(FlashIsa isa, ThreadPool* pool) {
    detail::ScopedFlashIsa scoped(isa);
    std::vector<const kv::KvLayerView*> views(pos.size(), &f.view);
    std::vector<float> out(pos.size() * out_stride());
    attention(q.data(), pos.data(), views.data(), n_q(), p, out.data(), pool);
    return out;
  }
};

std::vector<FlashIsa> simd_isas() {
  std::vector<FlashIsa> v;
  for (FlashIsa isa : {FlashIsa::kAvx2, FlashIsa::kAvx512})
    if (detail::flash_isa_available(isa)) v.push_back(isa);
  return v;
}

class FlashIsaCases : public ::testing::TestWithParam<FlashCase> {};

TEST_P(FlashIsaCases, SimdEqualsTwinBitwise) {
  const FlashCase c = GetParam();
  Fixture run(c, 3 * c.pt + 7, 11);  // partial first/last pages, several tiles
  ThreadPool pool(2);
  const auto twin = run.attend(FlashIsa::kTwin, &pool);
  for (float x : twin) ASSERT_TRUE(std::isfinite(x)) << describe(c);
  const auto isas = simd_isas();
  if (isas.empty()) GTEST_SKIP() << "no SIMD flash kernel on this CPU";
  for (FlashIsa isa : isas) {
    const auto got = run.attend(isa, &pool);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_TRUE(same(got[i], twin[i])) << describe(c) << " isa " << int(isa) << " element " << i
                                         << ": " << got[i] << " vs twin " << twin[i];
  }
}

// A row computed alone, over a view that ends at its own position (token-by-token or a
// chunk boundary), gives the bits it gets inside the whole batch.
TEST_P(FlashIsaCases, RowAloneEqualsRowInBatch) {
  const FlashCase c = GetParam();
  Fixture run(c, 2 * c.pt + 5, 5);
  ThreadPool pool(2);
  std::vector<FlashIsa> isas = simd_isas();
  isas.push_back(FlashIsa::kTwin);
  for (FlashIsa isa : isas) {
    const auto batch = run.attend(isa, &pool);
    for (int64_t r = 0; r < run.n_q(); r += 3) {
      ASSERT_TRUE(run.row_equals(run.attend_row(isa, r, nullptr, true), batch, r))
          << describe(c) << " isa " << int(isa) << " row " << r;
    }
  }
}

const FlashCase kFlashCases[] = {
    // The 1b preset's shape on both KV types the targets name, and the other direct types.
    {DType::kF16, DType::kF16, 8, 2, 64, 64, 32, 0, 0.0f, false},
    {DType::kQ8_0, DType::kQ8_0, 8, 2, 64, 64, 32, 0, 0.0f, false},
    {DType::kF32, DType::kF32, 4, 2, 64, 64, 32, 0, 0.0f, false},
    {DType::kBF16, DType::kBF16, 2, 2, 64, 64, 32, 0, 0.0f, false},
    // Odd head dimensions (tails of 8), groups 1..12, pages not a multiple of 16.
    {DType::kF16, DType::kF16, 1, 3, 40, 40, 8, 0, 0.0f, false},
    {DType::kF32, DType::kF16, 3, 1, 72, 72, 20, 0, 0.0f, false},
    {DType::kBF16, DType::kF32, 5, 2, 80, 80, 16, 0, 0.0f, false},
    {DType::kQ8_0, DType::kF16, 12, 1, 96, 96, 17, 0, 0.0f, false},
    {DType::kQ8_0, DType::kQ8_0, 4, 2, 128, 128, 32, 0, 0.0f, false},
    {DType::kF16, DType::kQ8_0, 2, 1, 256, 256, 32, 0, 0.0f, false},
    {DType::kF16, DType::kF32, 2, 2, 20, 36, 7, 0, 0.0f, false},  // dk != dv
    {DType::kF32, DType::kBF16, 6, 1, 12, 20, 8, 0, 0.0f, false},  // a 16-column pass, then a tail
    {DType::kF32, DType::kF32, 9, 1, 8, 8, 1, 0, 0.0f, false},    // one key per page
    // Windows, sinks, softcap.
    {DType::kF16, DType::kF16, 4, 2, 64, 64, 16, 24, 0.0f, true},
    {DType::kQ8_0, DType::kQ8_0, 8, 1, 64, 64, 32, 40, 0.0f, true},
    {DType::kBF16, DType::kF16, 2, 2, 48, 48, 8, 13, 30.0f, false},
    {DType::kF32, DType::kQ8_0, 3, 2, 32, 32, 12, 0, 5.0f, true},
    // q8_0 V in pair tiles (even pages): 3 blocks, groups past one 8-head block, odd rows
    // at both ends; a 128-key page (segments of 1024: a smaller P_max, step 5); an odd page
    // keeps q8_0 V in rows.
    {DType::kF16, DType::kQ8_0, 12, 1, 96, 96, 16, 0, 0.0f, false},
    {DType::kQ8_0, DType::kQ8_0, 5, 2, 32, 32, 6, 11, 0.0f, true},
    {DType::kQ8_0, DType::kQ8_0, 2, 1, 32, 32, 128, 0, 0.0f, false},
    {DType::kQ8_0, DType::kQ8_0, 3, 2, 64, 64, 17, 0, 0.0f, true},
    // Prefill rows on element-major K (attend_flash_rows; AVX-512): dk of 8 registers with
    // softcap and sinks, and pages of 48 (segments not a power of two) with a window.
    {DType::kF16, DType::kF16, 4, 2, 128, 128, 16, 0, 5.0f, true},
    {DType::kF32, DType::kF16, 3, 1, 32, 48, 48, 20, 0.0f, true},
    // Types the kernels do not read directly (widened first).
    {DType::kQ4_0, DType::kQ4_0, 4, 2, 64, 64, 32, 0, 0.0f, false},
    {DType::kQ8_0, DType::kQ5_1, 2, 2, 64, 32, 16, 9, 0.0f, true},
};

INSTANTIATE_TEST_SUITE_P(Kernels, FlashIsaCases, ::testing::ValuesIn(kFlashCases));

// Decode at depth: one row's segments run on several threads and are folded afterwards;
// the row must get the bits it gets inside a prefill batch (one task walks all segments).
TEST(FlashIsa, DecodeSplitAcrossThreadsEqualsOneWalk) {
  for (const FlashCase& c : {FlashCase{DType::kQ8_0, DType::kQ8_0, 8, 2, 64, 64, 8, 0, 0.0f, true},
                             FlashCase{DType::kQ8_0, DType::kQ8_0, 8, 4, 64, 64, 8, 0, 0.0f, false},
                             FlashCase{DType::kF16, DType::kQ4_0, 3, 1, 32, 32, 5, 90, 0.0f, false}}) {
    Fixture run(c, 301, 4);  // segments of 8 pages: several, the last one partial
    std::vector<FlashIsa> isas = simd_isas();
    isas.push_back(FlashIsa::kTwin);
    // Thread counts that cut the (segment, kv head) atoms between kv heads of a segment.
    // Every ISA also against the twin's batch: the fold of the segments (SIMD where the
    // AVX-512 kernel runs) gives the twin's bits.
    ThreadPool one(1);
    const auto twin = run.attend(FlashIsa::kTwin, &one);
    for (int threads : {2, 3, 5}) {
      ThreadPool pool(threads);
      for (FlashIsa isa : isas) {
        const auto batch = run.attend(isa, &pool);
        for (int64_t r : {run.n_q() - 1, run.n_q() / 2, int64_t{0}}) {
          const auto row = run.attend_row(isa, r, &pool, false);
          ASSERT_TRUE(run.row_equals(row, batch, r))
              << describe(c) << " isa " << int(isa) << " threads " << threads << " row " << r;
          ASSERT_TRUE(run.row_equals(row, twin, r))
              << describe(c) << " isa " << int(isa) << " threads " << threads << " row " << r << " vs twin";
        }
      }
    }
  }
}

// Rows of several sequences in one call (a batch of prompt chunks): the AVX-512 path blocks
// consecutive rows of one view (attend_flash_rows); every row keeps the bits it has alone.
TEST(FlashIsa, RowsOfSeveralSequencesEqualTheirRowsAlone) {
  const FlashCase c{DType::kF16, DType::kF16, 8, 2, 64, 64, 16, 0, 0.0f, false};
  Fixture a(c, 75, 21), b(c, 40, 22);
  // (sequence, row) in call order: runs of both, longer and shorter than a block of 16.
  std::vector<std::pair<Fixture*, int64_t>> order;
  for (int64_t r = 0; r < 20; ++r) order.push_back({&a, r});
  for (int64_t r = 0; r < 3; ++r) order.push_back({&b, r});
  for (int64_t r = 20; r < 75; ++r) order.push_back({&a, r});
  for (int64_t r = 3; r < 40; ++r) order.push_back({&b, r});
  const int64_t stride_q = a.n_head * c.dk, stride_o = a.out_stride();
  std::vector<float> q, out(order.size() * stride_o);
  std::vector<int64_t> pos;
  std::vector<const kv::KvLayerView*> views;
  for (const auto& [f, r] : order) {
    q.insert(q.end(), f->q.begin() + r * stride_q, f->q.begin() + (r + 1) * stride_q);
    pos.push_back(f->pos[r]);
    views.push_back(&f->f.view);
  }
  ThreadPool pool(2);
  std::vector<FlashIsa> isas = simd_isas();
  isas.push_back(FlashIsa::kTwin);
  for (FlashIsa isa : isas) {
    {
      detail::ScopedFlashIsa scoped(isa);
      attention(q.data(), pos.data(), views.data(), static_cast<int64_t>(order.size()), a.p, out.data(), &pool);
    }
    for (size_t i = 0; i < order.size(); i += 5) {
      const auto [f, r] = order[i];
      const auto row = f->attend_row(isa, r, nullptr, false);
      ASSERT_EQ(std::memcmp(row.data(), &out[i * stride_o], sizeof(float) * stride_o), 0)
          << "isa " << int(isa) << " call row " << i;
    }
  }
}

TEST(FlashIsa, NanInQueryOrKeyAgreesWithTwin) {
  // dk 40: K rows; dk 48 on pages of 16: element-major K on the AVX-512 prefill path.
  for (const FlashCase& c : {FlashCase{DType::kF16, DType::kF16, 4, 2, 40, 40, 16, 0, 0.0f, true},
                             FlashCase{DType::kF16, DType::kF16, 4, 2, 48, 48, 16, 0, 0.0f, true}}) {
    for (int where : {0, 1}) {
      Fixture run(c, 45, 3);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      if (where == 0) {
        run.q[5 * run.n_head * c.dk + 2 * c.dk + 7] = nan;  // row 5, head 2
      } else {
        std::vector<float> row(c.dk, 0.5f);
        row[3] = nan;  // position 20, kv head 1: every later row of heads 4..7 sees it
        const int64_t p = 20, pg = p / c.pt, t = p % c.pt;
        tensor::quantize_row(c.kt, row.data(),
                             run.f.k_pages[pg].data() + t * run.f.view.k_token_stride + run.f.view.k_head_bytes, c.dk);
      }
      const auto twin = run.attend(FlashIsa::kTwin, nullptr);
      size_t n_nan = 0;
      for (float x : twin) n_nan += std::isnan(x);
      EXPECT_GT(n_nan, 0u) << "NaN input must show in the output";
      EXPECT_LT(n_nan, twin.size()) << "NaN must stay in the heads that saw it";
      for (FlashIsa isa : simd_isas()) {
        const auto got = run.attend(isa, nullptr);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_TRUE(same(got[i], twin[i])) << "dk " << c.dk << " where " << where << " element " << i;
      }
    }
  }
}

TEST(FlashIsa, LargeScoresAndFarApartMaximaStayFinite) {
  // Scores of hundreds: exp_defined clamps, the running max moves up across tiles.
  const FlashCase c{DType::kF32, DType::kF32, 2, 1, 16, 16, 8, 0, 0.0f, false};
  Fixture run(c, 40, 9);
  for (size_t i = 0; i < run.q.size(); ++i) run.q[i] *= 1.0f + float(i % 7) * 20.0f;
  const auto twin = run.attend(FlashIsa::kTwin, nullptr);
  for (float x : twin) ASSERT_TRUE(std::isfinite(x));
  for (FlashIsa isa : simd_isas()) {
    const auto got = run.attend(isa, nullptr);
    ASSERT_EQ(std::memcmp(got.data(), twin.data(), sizeof(float) * got.size()), 0);
  }
}

TEST(FlashIsa, TreeSumIsTheDefinedOrder) {
  // tree16_sum pairs lanes l and l + 8 first: 1e8 in lane 0 cancels lane 8's −1e8 before
  // the small lanes are added; a sequential sum would lose them.
  float a[16] = {};
  a[0] = 1e8f;
  a[8] = -1e8f;
  for (int i = 1; i < 8; ++i) a[i] = 1.0f;
  EXPECT_EQ(detail::tree16_sum(a), 7.0f);
  float b[16];
  for (int i = 0; i < 16; ++i) b[i] = float(i);
  EXPECT_EQ(detail::tree16_max(b), 15.0f);
}

}  // namespace
}  // namespace keel::kernels
