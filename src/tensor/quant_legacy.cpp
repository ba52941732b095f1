// Legacy 32-element block types: q4_0, q4_1, q5_0, q5_1, q8_0, q8_1.
//
// Quantizers follow llama.cpp's reference convention (codes from the unrounded scale, the
// scale then stored as fp16), so their output is byte-identical to llama.cpp's files; the
// reference-rows test checks that on ../shared. The error difference to quantizing against
// the rounded scale is below 1e-5 relative.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tensor/blocks.h"
#include "tensor/quant_internal.h"
#include "tensor/types.h"

namespace keel::tensor::detail {
namespace {

void min_max(const float* x, int n, float* min, float* max) {
  *min = x[0];
  *max = x[0];
  for (int j = 1; j < n; ++j) {
    *min = std::fmin(*min, x[j]);
    *max = std::fmax(*max, x[j]);
  }
}

// Rounds a scale to fp16 and returns (stored bits, inverse of the unrounded scale or 0).
uint16_t store_scale(float d, float* inverse) {
  const uint16_t h = fp32_to_fp16(d);
  *inverse = (d != 0.0f && std::isfinite(d)) ? 1.0f / d : 0.0f;
  return h;
}

// Packs 32 codes (each < 16) into nibbles: element j low, element j + 16 high.
void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
}

// Packs 32 five-bit codes: low nibbles as pack_nibbles, fifth bits into the 32-bit qh.
void pack_five_bits(const int* q, uint8_t* qs, uint8_t* qh) {
  int low[kQK];
  uint32_t bits = 0;
  for (int j = 0; j < kQK; ++j) {
    low[j] = q[j] & 0x0f;
    bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  }
  pack_nibbles(low, qs);
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

// Codes of a 4- or 5-bit block: q[j] = nibble | fifth bit.
void unpack_codes(const uint8_t* qs, const uint8_t* qh, int* q) {
  uint32_t bits = 0;
  if (qh != nullptr) {
    for (int b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(qh[b]) << (8 * b);
  }
  for (int j = 0; j < kQK / 2; ++j) {
    q[j] = (qs[j] & 0x0f) | static_cast<int>(((bits >> j) & 1) << 4);
    q[j + kQK / 2] = (qs[j] >> 4) | static_cast<int>(((bits >> (j + 16)) & 1) << 4);
  }
}

// Symmetric block with codes in [0, 2*half - 1] meaning q - half (q4_0: half 8, q5_0: 16).
void quantize_symmetric(const float* x, int half, int* q, uint16_t* d) {
  float id;
  *d = store_scale(signed_absmax(x, kQK) / static_cast<float>(-half), &id);
  for (int j = 0; j < kQK; ++j) q[j] = round_clamp(x[j] * id + static_cast<float>(half), 0, 2 * half - 1);
}

// Affine block with codes in [0, levels - 1]: x = q * d + m.
void quantize_affine(const float* x, int levels, int* q, uint16_t* d, uint16_t* m) {
  float min, max;
  min_max(x, kQK, &min, &max);
  float id;
  *d = store_scale((max - min) / static_cast<float>(levels - 1), &id);
  *m = fp32_to_fp16(min);
  const float min_stored = fp16_to_fp32(*m);
  for (int j = 0; j < kQK; ++j) q[j] = round_clamp((x[j] - min_stored) * id, 0, levels - 1);
}

template <typename Block>
constexpr bool kHasFifthBit = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;
template <typename Block>
constexpr bool kHasMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;

// q4_0 / q5_0: x = (q - offset) * d; q4_1 / q5_1: x = q * d + m.
template <typename Block>
void dequantize_legacy(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<Block>(src, i);
    int q[kQK];
    const float d = fp16_to_fp32(b.d);
    if constexpr (kHasFifthBit<Block>) {
      unpack_codes(b.qs, b.qh, q);
    } else {
      unpack_codes(b.qs, nullptr, q);
    }
    if constexpr (kHasMin<Block>) {
      const float m = fp16_to_fp32(b.m);
      for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(q[j]) * d + m;
    } else {
      const int offset = kHasFifthBit<Block> ? 16 : 8;
      for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(q[j] - offset) * d;
    }
  }
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t nb) { dequantize_legacy<BlockQ4_0>(src, dst, nb); }
void dequantize_q4_1(const void* src, float* dst, int64_t nb) { dequantize_legacy<BlockQ4_1>(src, dst, nb); }
void dequantize_q5_0(const void* src, float* dst, int64_t nb) { dequantize_legacy<BlockQ5_0>(src, dst, nb); }
void dequantize_q5_1(const void* src, float* dst, int64_t nb) { dequantize_legacy<BlockQ5_1>(src, dst, nb); }

void dequantize_q8_0(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(b.qs[j]) * d;
  }
}

void dequantize_q8_1(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ8_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = static_cast<float>(b.qs[j]) * d;
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    BlockQ4_0 b;
    int q[kQK];
    quantize_symmetric(src + i * kQK, 8, q, &b.d);
    pack_nibbles(q, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    BlockQ4_1 b;
    int q[kQK];
    quantize_affine(src + i * kQK, 16, q, &b.d, &b.m);
    pack_nibbles(q, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    BlockQ5_0 b;
    int q[kQK];
    quantize_symmetric(src + i * kQK, 16, q, &b.d);
    pack_five_bits(q, b.qs, b.qh);
    store_block(dst, i, b);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    BlockQ5_1 b;
    int q[kQK];
    quantize_affine(src + i * kQK, 32, q, &b.d, &b.m);
    pack_five_bits(q, b.qs, b.qh);
    store_block(dst, i, b);
  }
}

namespace {

// Fills qs with round(x / d) for d = amax / 127 (fp16-rounded); returns the stored d bits.
uint16_t quantize_q8_codes(const float* x, int8_t* qs) {
  float id;
  const uint16_t d = store_scale(std::fabs(signed_absmax(x, kQK)) / 127.0f, &id);
  for (int j = 0; j < kQK; ++j) qs[j] = static_cast<int8_t>(round_clamp(x[j] * id, -127, 127));
  return d;
}

}  // namespace

void quantize_q8_0(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    BlockQ8_0 b;
    b.d = quantize_q8_codes(src + i * kQK, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    BlockQ8_1 b;
    b.d = quantize_q8_codes(src + i * kQK, b.qs);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += b.qs[j];
    b.s = fp32_to_fp16(fp16_to_fp32(b.d) * static_cast<float>(sum));
    store_block(dst, i, b);
  }
}

}  // namespace keel::tensor::detail
