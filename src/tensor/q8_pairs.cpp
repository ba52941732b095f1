#include "tensor/q8_pairs.h"

#include <cstring>
#include <vector>

#include "tensor/blocks.h"
#include "tensor/types.h"

namespace keel::tensor::q8_pairs {

namespace {

uint8_t* scale_at(uint8_t* tile, int64_t n, int64_t b, int64_t j) { return tile + 2 * (b * n + j); }
uint8_t* code_at(uint8_t* tile, int64_t n, int64_t d, int64_t j, int64_t e) {
  return tile + codes_offset(n, d) + static_cast<size_t>((j / 2) * 2 * d + 2 * e + (j & 1));
}

// The row as q8_0 blocks (from or to the tile).
void gather(const uint8_t* tile, int64_t n, int64_t d, int64_t j, BlockQ8_0* blocks) {
  uint8_t* t = const_cast<uint8_t*>(tile);  // read only
  for (int64_t b = 0; b < d / kQK; ++b) {
    std::memcpy(&blocks[b].d, scale_at(t, n, b, j), 2);
    for (int e = 0; e < kQK; ++e) blocks[b].qs[e] = static_cast<int8_t>(*code_at(t, n, d, j, b * kQK + e));
  }
}

void scatter(uint8_t* tile, int64_t n, int64_t d, int64_t j, const BlockQ8_0* blocks) {
  for (int64_t b = 0; b < d / kQK; ++b) {
    std::memcpy(scale_at(tile, n, b, j), &blocks[b].d, 2);
    for (int e = 0; e < kQK; ++e) *code_at(tile, n, d, j, b * kQK + e) = static_cast<uint8_t>(blocks[b].qs[e]);
  }
}

}  // namespace

size_t tile_bytes(int64_t n, int64_t d) { return static_cast<size_t>(n) * row_bytes(DType::kQ8_0, d); }

void write_row(uint8_t* tile, int64_t n, int64_t d, int64_t j, const float* x) {
  thread_local std::vector<BlockQ8_0> blocks;
  blocks.resize(static_cast<size_t>(d / kQK));
  quantize_row(DType::kQ8_0, x, blocks.data(), d);
  scatter(tile, n, d, j, blocks.data());
}

void read_row(const uint8_t* tile, int64_t n, int64_t d, int64_t j, float* out) {
  thread_local std::vector<BlockQ8_0> blocks;
  blocks.resize(static_cast<size_t>(d / kQK));
  gather(tile, n, d, j, blocks.data());
  dequantize_row(DType::kQ8_0, blocks.data(), out, d);
}

void copy_row(uint8_t* dst, int64_t dst_j, const uint8_t* src, int64_t src_j, int64_t n, int64_t d) {
  thread_local std::vector<BlockQ8_0> blocks;
  blocks.resize(static_cast<size_t>(d / kQK));
  gather(src, n, d, src_j, blocks.data());
  scatter(dst, n, d, dst_j, blocks.data());
}

}  // namespace keel::tensor::q8_pairs
