// Block structs bit-exact with GGUF (ggml) for every quantized type. A row of a block
// type is a packed array of these structs (no padding); rows in a GGUF file are not
// necessarily aligned to the struct's alignment, so read them via memcpy or byte access.
// Half-precision fields are raw IEEE binary16 bits (see fp16_to_fp32 in tensor/types.h).
//
// Layout conventions shared by the 32-element legacy types (q4_0, q4_1, q5_0, q5_1, mxfp4):
// byte qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
#pragma once

#include <cstdint>

namespace keel::tensor {

inline constexpr int kQK = 32;    // elements per legacy block
inline constexpr int kQK_K = 256;  // elements per K-quant super-block

// x = (q - 8) * d, q in [0, 15].
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// x = q * d + m, q in [0, 15].
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// 5-bit q = nibble | (bit j of qh) << 4 for element j (qh little-endian, 32 bits);
// x = (q - 16) * d.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// As q5_0 with x = q * d + m.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// x = q * d.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// x = q * d; s = d * sum(q) (used by dot products against q4_1/q5_1 mins).
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

// 16 sub-blocks of 16. scales[i]: low nibble scale, high nibble min of sub-block i.
// Elements are in two halves of 128; in half h, element 32*g + l (g in 0..3, l in 0..31)
// is bits 2g..2g+1 of qs[32*h + l], in sub-block 8h + 2g + l/16.
// x = d * scale * q - dmin * min.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 sub-blocks of 16 with signed 6-bit scales (stored +32): scale i has its low 4 bits in
// the low (i < 8) or high (i >= 8) nibble of scales[i % 8] and its high 2 bits at bit
// 2*(i/4) of scales[8 + i % 4]. The 2-bit q are laid out as in q2_K; element 32*g + l of
// the block (g in 0..7) has its high bit at bit g of hmask[l]; a clear bit subtracts 4.
// x = d * (scale - 32) * (q - (hbit ? 0 : 4)).
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

// 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes: for j < 4,
// scale = scales[j] & 63, min = scales[j + 4] & 63; for j >= 4,
// scale = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4,
// min = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.
// Sub-blocks 2c and 2c+1 share qs[32c .. 32c+31] (low / high nibbles).
// x = d * scale * q - dmin * min.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};

// As q4_K plus a fifth bit: for sub-block s, element l has its high bit at bit s of qh[l].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16 with int8 scales. In half h (128 elements), for l in 0..31:
// element l     = ql[64h + l] low nibble      | bits 0-1 of qh[32h + l] << 4
// element l+32  = ql[64h + l + 32] low nibble | bits 2-3 << 4
// element l+64  = ql[64h + l] high nibble     | bits 4-5 << 4
// element l+96  = ql[64h + l + 32] high nibble| bits 6-7 << 4
// x = d * scales[e / 16] * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// Intermediate type for dot products: x = d * q; bsums[i] = sum of q over elements 16i..16i+15.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// OCP MX FP4: e is an E8M0 exponent; each nibble is FP4 E2M1 (sign bit 3). With the
// doubled value table {0,1,2,3,4,6,8,12} (and negatives), x = table[q] * 2^(e - 128).
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockMXFP4) == 17);

// The fp4 E2M1 values doubled so they are integers.
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a q4_K / q5_K block.
inline void unpack_scale_min_k4(int j, const uint8_t* scales, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = scales[j] & 63;
    *min = scales[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Unpacks q3_K's 16 signed scales (stored value - 32).
inline void unpack_scales_q3_k(const uint8_t* packed, int8_t* out) {
  for (int i = 0; i < 16; ++i) {
    const int low = (i < 8) ? (packed[i] & 0x0f) : (packed[i - 8] >> 4);
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    out[i] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

}  // namespace keel::tensor
