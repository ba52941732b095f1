// q8_0 pair tiles (tensor/q8_pairs.h): the same values as q8_0 rows, in the layout the
// attention kernels read.
#include "tensor/q8_pairs.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/blocks.h"
#include "tensor/types.h"

namespace keel::tensor {
namespace {

std::vector<float> random_row(int64_t d, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(d));
  for (auto& v : x) v = nd(rng);
  return x;
}

TEST(Q8Pairs, RowsReadBackAsQ8_0RowsAndTakeTheirBytes) {
  std::mt19937 rng(3);
  for (int64_t n : {2, 6, 32}) {
    for (int64_t d : {32, 96, 128}) {
      ASSERT_EQ(q8_pairs::tile_bytes(n, d), static_cast<size_t>(n) * row_bytes(DType::kQ8_0, d));
      std::vector<uint8_t> tile(q8_pairs::tile_bytes(n, d), 0xAB);
      std::vector<std::vector<float>> rows;
      for (int64_t j = 0; j < n; ++j) {
        rows.push_back(random_row(d, rng));
        q8_pairs::write_row(tile.data(), n, d, j, rows.back().data());
      }
      std::vector<uint8_t> q8(row_bytes(DType::kQ8_0, d));
      std::vector<float> want(static_cast<size_t>(d)), got(static_cast<size_t>(d));
      for (int64_t j = 0; j < n; ++j) {
        quantize_row(DType::kQ8_0, rows[j].data(), q8.data(), d);
        dequantize_row(DType::kQ8_0, q8.data(), want.data(), d);
        q8_pairs::read_row(tile.data(), n, d, j, got.data());
        ASSERT_EQ(std::memcmp(want.data(), got.data(), sizeof(float) * d), 0) << "n " << n << " d " << d << " row " << j;
      }
    }
  }
}

// The layout the kernels rely on: scales [d/32][n], then codes of rows 2i, 2i+1 interleaved.
TEST(Q8Pairs, LayoutPutsScalesApartAndPairsCodesByRow) {
  const int64_t n = 4, d = 64;
  std::vector<uint8_t> tile(q8_pairs::tile_bytes(n, d), 0);
  std::mt19937 rng(5);
  for (int64_t j = 0; j < n; ++j) {
    const auto x = random_row(d, rng);
    q8_pairs::write_row(tile.data(), n, d, j, x.data());
    std::vector<BlockQ8_0> blocks(d / 32);
    quantize_row(DType::kQ8_0, x.data(), blocks.data(), d);
    for (int64_t b = 0; b < d / 32; ++b) {
      uint16_t scale;
      std::memcpy(&scale, tile.data() + 2 * (b * n + j), 2);
      EXPECT_EQ(scale, blocks[b].d);
      for (int e = 0; e < 32; ++e) {
        const size_t at = q8_pairs::codes_offset(n, d) + (j / 2) * 2 * d + 2 * (32 * b + e) + (j & 1);
        EXPECT_EQ(static_cast<int8_t>(tile[at]), blocks[b].qs[e]);
      }
    }
  }
}

TEST(Q8Pairs, CopyAndWriteTouchOnlyTheirRow) {
  const int64_t n = 8, d = 64;
  std::mt19937 rng(9);
  std::vector<uint8_t> a(q8_pairs::tile_bytes(n, d)), b(q8_pairs::tile_bytes(n, d));
  for (int64_t j = 0; j < n; ++j) {
    q8_pairs::write_row(a.data(), n, d, j, random_row(d, rng).data());
    q8_pairs::write_row(b.data(), n, d, j, random_row(d, rng).data());
  }
  const std::vector<uint8_t> b_before = b;
  q8_pairs::copy_row(b.data(), 5, a.data(), 2, n, d);
  std::vector<float> x(d), y(d);
  for (int64_t j = 0; j < n; ++j) {
    q8_pairs::read_row(b.data(), n, d, j, x.data());
    if (j == 5) {
      q8_pairs::read_row(a.data(), n, d, 2, y.data());
    } else {
      q8_pairs::read_row(b_before.data(), n, d, j, y.data());
    }
    EXPECT_EQ(std::memcmp(x.data(), y.data(), sizeof(float) * d), 0) << "row " << j;
  }
}

}  // namespace
}  // namespace keel::tensor
