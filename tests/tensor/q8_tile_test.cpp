// q8_0 tiles (tensor/q8_tile.h): the same values as q8_0 rows, in the layouts the attention
// kernels read.
#include "tensor/q8_tile.h"

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

TEST(Q8Tile, RowsReadBackAsQ8_0RowsAndTakeTheirBytes) {
  std::mt19937 rng(3);
  for (int64_t n : {16, 32, 48}) {
    for (int64_t d : {32, 96, 128}) {
     for (const q8_tile::Shape shape : {q8_tile::value_pairs(n, d), q8_tile::key_groups(n, d)}) {
      ASSERT_EQ(q8_tile::tile_bytes(shape), static_cast<size_t>(n) * row_bytes(DType::kQ8_0, d));
      std::vector<uint8_t> tile(q8_tile::tile_bytes(shape), 0xAB);
      std::vector<std::vector<float>> rows;
      for (int64_t j = 0; j < n; ++j) {
        rows.push_back(random_row(d, rng));
        q8_tile::write_row(tile.data(), shape, j, rows.back().data());
      }
      std::vector<uint8_t> q8(row_bytes(DType::kQ8_0, d));
      std::vector<float> want(static_cast<size_t>(d)), got(static_cast<size_t>(d));
      for (int64_t j = 0; j < n; ++j) {
        quantize_row(DType::kQ8_0, rows[j].data(), q8.data(), d);
        dequantize_row(DType::kQ8_0, q8.data(), want.data(), d);
        q8_tile::read_row(tile.data(), shape, j, got.data());
        ASSERT_EQ(std::memcmp(want.data(), got.data(), sizeof(float) * d), 0)
            << "n " << n << " d " << d << " group " << shape.group_rows << " row " << j;
      }
     }
    }
  }
}

// The layouts the kernels rely on: scales [d/32][n], then the codes of rows 2i, 2i+1
// interleaved byte by byte (value pairs), or of 16 rows in 4-byte groups (key groups).
TEST(Q8Tile, LayoutPutsScalesApartAndInterleavesCodesByRowGroup) {
  const int64_t n = 32, d = 64;
  auto pair_at = [&](int64_t j, int64_t e) { return (j / 2) * 2 * d + 2 * e + (j & 1); };
  auto key_at = [&](int64_t j, int64_t e) { return (j / 16) * 16 * d + (e / 4) * 64 + (j % 16) * 4 + e % 4; };
  for (int shape_i = 0; shape_i < 2; ++shape_i) {
    const q8_tile::Shape shape = shape_i == 0 ? q8_tile::value_pairs(n, d) : q8_tile::key_groups(n, d);
    std::vector<uint8_t> tile(q8_tile::tile_bytes(shape), 0);
    std::mt19937 rng(5);
    for (int64_t j = 0; j < n; ++j) {
      const auto x = random_row(d, rng);
      q8_tile::write_row(tile.data(), shape, j, x.data());
      std::vector<BlockQ8_0> blocks(d / 32);
      quantize_row(DType::kQ8_0, x.data(), blocks.data(), d);
      for (int64_t b = 0; b < d / 32; ++b) {
        uint16_t scale;
        std::memcpy(&scale, tile.data() + 2 * (b * n + j), 2);
        EXPECT_EQ(scale, blocks[b].d);
        for (int e = 0; e < 32; ++e) {
          const int64_t el = 32 * b + e;
          const size_t at = q8_tile::codes_offset(shape) + static_cast<size_t>(shape_i == 0 ? pair_at(j, el) : key_at(j, el));
          EXPECT_EQ(static_cast<int8_t>(tile[at]), blocks[b].qs[e]) << "shape " << shape_i << " row " << j << " element " << el;
        }
      }
    }
  }
}

TEST(Q8Tile, CopyAndWriteTouchOnlyTheirRow) {
  const int64_t n = 16, d = 64;
  const q8_tile::Shape shape = q8_tile::key_groups(n, d);
  std::mt19937 rng(9);
  std::vector<uint8_t> a(q8_tile::tile_bytes(shape)), b(q8_tile::tile_bytes(shape));
  for (int64_t j = 0; j < n; ++j) {
    q8_tile::write_row(a.data(), shape, j, random_row(d, rng).data());
    q8_tile::write_row(b.data(), shape, j, random_row(d, rng).data());
  }
  const std::vector<uint8_t> b_before = b;
  q8_tile::copy_row(b.data(), 5, a.data(), 2, shape);
  std::vector<float> x(d), y(d);
  for (int64_t j = 0; j < n; ++j) {
    q8_tile::read_row(b.data(), shape, j, x.data());
    if (j == 5) {
      q8_tile::read_row(a.data(), shape, 2, y.data());
    } else {
      q8_tile::read_row(b_before.data(), shape, j, y.data());
    }
    EXPECT_EQ(std::memcmp(x.data(), y.data(), sizeof(float) * d), 0) << "row " << j;
  }
}

}  // namespace
}  // namespace keel::tensor
