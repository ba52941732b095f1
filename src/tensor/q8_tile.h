// q8_0 tiles: n rows of d elements quantized exactly as q8_0 (quantize_row(kQ8_0)), but laid
// out for a kernel that works on a group of rows at once (the KV cache's pages: attention
// scores a run of keys against a query, and weights a run of values). The block scales are
// apart from the codes, and the codes of each group of `group_rows` rows are interleaved in
// lanes of `lane_bytes` bytes:
//
//   scales [d / 32][n]  f16 bits: row j's block b at index b · n + j
//   codes  [n / R][d / E][R][E] int8 (R = group_rows, E = lane_bytes): row j's element e at
//          byte (j / R) · R·d + (e / E) · R·E + (j % R) · E + e % E
//
// Two shapes serve attention (both are the same bytes as n q8_0 rows: tile_bytes):
//  - value_pairs (R 2, E 1): one 32-byte load sign-extended to 16 bits gives 16 elements ×
//    (row 2i, row 2i + 1), the 32-bit lanes a pair dot (vpdpwssd / vpmaddwd) reads.
//  - key_groups (R 16, E 4): one 64-byte load gives 16 rows' 4-byte groups of the same
//    elements, one per 32-bit lane, which vpdpbusd multiplies by a broadcast query group.
// Either way a run of rows' scales is one contiguous read.
//
// Preconditions (callers check; these functions do not): n a positive multiple of R, d a
// positive multiple of 32, 0 <= j < n. Rows are independent: writing row j touches only its
// bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/blocks.h"

namespace keel::tensor::q8_tile {

struct Shape {
  int64_t n = 0;         // rows
  int64_t d = 0;         // elements per row
  int64_t group_rows = 2;
  int64_t lane_bytes = 1;
};
inline Shape value_pairs(int64_t n, int64_t d) { return {n, d, 2, 1}; }
inline Shape key_groups(int64_t n, int64_t d) { return {n, d, 16, 4}; }

size_t tile_bytes(const Shape& s);
// Byte offset of the codes within a tile (the scales come first).
inline size_t codes_offset(const Shape& s) { return static_cast<size_t>(2 * s.n * (s.d / 32)); }
// Offset of row j's element e from the start of the codes.
inline size_t code_index(const Shape& s, int64_t j, int64_t e) {
  const int64_t r = s.group_rows, w = s.lane_bytes;
  return static_cast<size_t>((j / r) * r * s.d + (e / w) * r * w + (j % r) * w + e % w);
}

// Row j ← x[0, d) quantized as quantize_row(kQ8_0, x, ·, d) would.
void write_row(uint8_t* tile, const Shape& s, int64_t j, const float* x);
// Row j as its d / 32 q8_0 blocks (the bytes quantize_row wrote).
void read_blocks(const uint8_t* tile, const Shape& s, int64_t j, BlockQ8_0* out);
// out[0, d) ← row j's values, as dequantize_row(kQ8_0, ·, out, d) gives them.
void read_row(const uint8_t* tile, const Shape& s, int64_t j, float* out);
// Row dst_j of dst ← row src_j of src (same shape), bit for bit.
void copy_row(uint8_t* dst, int64_t dst_j, const uint8_t* src, int64_t src_j, const Shape& s);

}  // namespace keel::tensor::q8_tile
