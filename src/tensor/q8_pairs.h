// q8_0 pair tiles: n rows of d elements quantized exactly as q8_0 (quantize_row(kQ8_0)), but
// laid out for a kernel that multiplies two rows at a time by per-row weights (the KV
// cache's V pages: attention's p·v). The block scales are apart from the codes, and the
// codes of rows 2i and 2i + 1 are interleaved element by element:
//
//   scales [d / 32][n]  f16 bits: row j's block b at index b · n + j
//   codes  [n / 2][d][2] int8:    row j's element e at byte (j / 2) · 2d + 2e + (j & 1)
//
// so one 32-byte load sign-extended to 16 bits gives 16 elements × (row 2i, row 2i + 1) as
// the 32-bit lanes a pair dot (vpdpwssd / vpmaddwd) reads, and a run of rows' scales is one
// contiguous read. A tile takes tile_bytes(n, d) = n · row_bytes(kQ8_0, d), the bytes of the
// same rows stored one after another.
//
// Preconditions (callers check; these functions do not): n even and > 0, d a positive
// multiple of 32, 0 <= j < n. Rows are independent: writing row j touches only its bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel::tensor::q8_pairs {

size_t tile_bytes(int64_t n, int64_t d);
// Byte offset of the codes within a tile (the scales come first).
inline size_t codes_offset(int64_t n, int64_t d) { return static_cast<size_t>(2 * n * (d / 32)); }

// Row j ← x[0, d) quantized as quantize_row(kQ8_0, x, ·, d) would.
void write_row(uint8_t* tile, int64_t n, int64_t d, int64_t j, const float* x);
// out[0, d) ← row j's values, as dequantize_row(kQ8_0, ·, out, d) gives them.
void read_row(const uint8_t* tile, int64_t n, int64_t d, int64_t j, float* out);
// Row dst_j of dst ← row src_j of src (same n and d), bit for bit.
void copy_row(uint8_t* dst, int64_t dst_j, const uint8_t* src, int64_t src_j, int64_t n, int64_t d);

}  // namespace keel::tensor::q8_pairs
