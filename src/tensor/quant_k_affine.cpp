// K-quants with a scale and a min per sub-block: q2_K (16 x 16), q4_K and q5_K (8 x 32).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tensor/blocks.h"
#include "tensor/quant_internal.h"
#include "tensor/quant_k_fit.h"
#include "tensor/types.h"

namespace keel::tensor::detail {
namespace {

// A super-block quantized before packing: codes per element, 4- or 6-bit scale and min
// codes per sub-block, and the two fp16 super-scales.
struct AffineSuperBlock {
  uint16_t d = 0;
  uint16_t dmin = 0;
  uint8_t scale[16] = {};
  uint8_t min[16] = {};
  uint8_t L[kQK_K] = {};
};

// sub: elements per sub-block; nmax: largest code; levels: largest scale/min code.
AffineSuperBlock quantize_affine_super(const float* x, int sub, int nmax, int levels) {
  AffineSuperBlock out;
  const int nsub = kQK_K / sub;
  float scales[16];
  float mins[16];
  for (int s = 0; s < nsub; ++s) {
    const AffineFit fit = fit_affine(x + s * sub, sub, nmax, out.L + s * sub);
    scales[s] = fit.scale;
    mins[s] = fit.min;
  }
  out.d = quantize_sub_scales(scales, nsub, levels, out.scale);
  out.dmin = quantize_sub_scales(mins, nsub, levels, out.min);
  // Re-assign codes against the scales a reader will see.
  const float d = fp16_to_fp32(out.d);
  const float dmin = fp16_to_fp32(out.dmin);
  for (int s = 0; s < nsub; ++s) {
    assign_affine(x + s * sub, sub, nmax, d * out.scale[s], dmin * out.min[s], out.L + s * sub);
  }
  return out;
}

void pack_scales_k4(const uint8_t* scale, const uint8_t* min, uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0x0f) | ((min[j + 4] & 0x0f) << 4));
  }
}

// Elements of sub-blocks 2c and 2c+1 share qs[32c + l] as low / high nibbles.
void pack_nibbles_k(const uint8_t* L, uint8_t* qs) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * c + l] = static_cast<uint8_t>((L[64 * c + l] & 0x0f) | ((L[64 * c + 32 + l] & 0x0f) << 4));
    }
  }
}

int nibble_k(const uint8_t* qs, int e) {
  const int s = e / 32;
  const uint8_t byte = qs[32 * (s / 2) + e % 32];
  return (s % 2 == 0) ? (byte & 0x0f) : (byte >> 4);
}

// q4_K and q5_K share scales and nibbles; q5_K adds the fifth bit from qh.
template <typename Block>
void dequantize_k4_family(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<Block>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, mn;
      unpack_scale_min_k4(s, b.scales, &sc, &mn);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        int q = nibble_k(b.qs, 32 * s + l);
        if constexpr (std::is_same_v<Block, BlockQ5_K>) q |= ((b.qh[l] >> s) & 1) << 4;
        y[32 * s + l] = dl * static_cast<float>(q) - ml;
      }
    }
  }
}

template <typename Block>
void quantize_k4_family(const float* src, void* dst, int64_t nb) {
  constexpr bool kFiveBit = std::is_same_v<Block, BlockQ5_K>;
  for (int64_t i = 0; i < nb; ++i) {
    const AffineSuperBlock q = quantize_affine_super(src + i * kQK_K, 32, kFiveBit ? 31 : 15, 63);
    Block b{};
    b.d = q.d;
    b.dmin = q.dmin;
    pack_scales_k4(q.scale, q.min, b.scales);
    pack_nibbles_k(q.L, b.qs);
    if constexpr (kFiveBit) {
      for (int e = 0; e < kQK_K; ++e) b.qh[e % 32] |= static_cast<uint8_t>(((q.L[e] >> 4) & 1) << (e / 32));
    }
    store_block(dst, i, b);
  }
}

}  // namespace

void dequantize_q2_k(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128;
      const int group = (e % 128) / 32;
      const int q = (b.qs[32 * half + e % 32] >> (2 * group)) & 3;
      const uint8_t sc = b.scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0x0f);
      const float ml = dmin * static_cast<float>(sc >> 4);
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

void quantize_q2_k(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const AffineSuperBlock q = quantize_affine_super(src + i * kQK_K, 16, 3, 15);
    BlockQ2_K b{};
    b.d = q.d;
    b.dmin = q.dmin;
    for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>(q.scale[s] | (q.min[s] << 4));
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128;
      const int group = (e % 128) / 32;
      b.qs[32 * half + e % 32] |= static_cast<uint8_t>(q.L[e] << (2 * group));
    }
    store_block(dst, i, b);
  }
}

void dequantize_q4_k(const void* src, float* dst, int64_t nb) { dequantize_k4_family<BlockQ4_K>(src, dst, nb); }

void quantize_q4_k(const float* src, void* dst, int64_t nb) { quantize_k4_family<BlockQ4_K>(src, dst, nb); }

void dequantize_q5_k(const void* src, float* dst, int64_t nb) { dequantize_k4_family<BlockQ5_K>(src, dst, nb); }

void quantize_q5_k(const float* src, void* dst, int64_t nb) { quantize_k4_family<BlockQ5_K>(src, dst, nb); }

}  // namespace keel::tensor::detail
