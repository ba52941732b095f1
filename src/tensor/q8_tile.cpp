#include "tensor/q8_tile.h"

#include <cstring>
#include <vector>

#include "tensor/types.h"

namespace keel::tensor::q8_tile {

namespace {

void scatter(uint8_t* tile, const Shape& s, int64_t j, const BlockQ8_0* blocks) {
  uint8_t* codes = tile + codes_offset(s);
  for (int64_t b = 0; b < s.d / kQK; ++b) {
    std::memcpy(tile + 2 * (b * s.n + j), &blocks[b].d, 2);
    for (int e = 0; e < kQK; ++e) codes[code_index(s, j, b * kQK + e)] = static_cast<uint8_t>(blocks[b].qs[e]);
  }
}

std::vector<BlockQ8_0>& row_blocks(int64_t d) {
  thread_local std::vector<BlockQ8_0> blocks;
  blocks.resize(static_cast<size_t>(d / kQK));
  return blocks;
}

}  // namespace

size_t tile_bytes(const Shape& s) { return static_cast<size_t>(s.n) * row_bytes(DType::kQ8_0, s.d); }

void write_row(uint8_t* tile, const Shape& s, int64_t j, const float* x) {
  std::vector<BlockQ8_0>& blocks = row_blocks(s.d);
  quantize_row(DType::kQ8_0, x, blocks.data(), s.d);
  scatter(tile, s, j, blocks.data());
}

void read_blocks(const uint8_t* tile, const Shape& s, int64_t j, BlockQ8_0* out) {
  const uint8_t* codes = tile + codes_offset(s);
  for (int64_t b = 0; b < s.d / kQK; ++b) {
    std::memcpy(&out[b].d, tile + 2 * (b * s.n + j), 2);
    for (int e = 0; e < kQK; ++e) out[b].qs[e] = static_cast<int8_t>(codes[code_index(s, j, b * kQK + e)]);
  }
}

void read_row(const uint8_t* tile, const Shape& s, int64_t j, float* out) {
  std::vector<BlockQ8_0>& blocks = row_blocks(s.d);
  read_blocks(tile, s, j, blocks.data());
  dequantize_row(DType::kQ8_0, blocks.data(), out, s.d);
}

void copy_row(uint8_t* dst, int64_t dst_j, const uint8_t* src, int64_t src_j, const Shape& s) {
  std::vector<BlockQ8_0>& blocks = row_blocks(s.d);
  read_blocks(src, s, src_j, blocks.data());
  scatter(dst, s, dst_j, blocks.data());
}

}  // namespace keel::tensor::q8_tile
