// K-quants with one signed scale per sub-block of 16: q3_K and q6_K; and q8_K.
#include <cmath>
#include <cstdint>

#include "tensor/blocks.h"
#include "tensor/quant_internal.h"
#include "tensor/quant_k_fit.h"
#include "tensor/types.h"

namespace keel::tensor::detail {
namespace {

struct SymmetricSuperBlock {
  uint16_t d = 0;
  int8_t scale[16] = {};  // signed sub-block scale codes
  int8_t L[kQK_K] = {};   // signed element codes
};

// Codes in [lo, hi]; sub-block scale codes in [scale_lo, scale_hi] (scale_lo < 0).
SymmetricSuperBlock quantize_symmetric_super(const float* x, int lo, int hi, int scale_lo,
                                             int scale_hi) {
  SymmetricSuperBlock out;
  float scales[16];
  for (int s = 0; s < 16; ++s) scales[s] = fit_symmetric(x + 16 * s, 16, lo, hi, out.L + 16 * s);
  const float max = signed_absmax(scales, 16);
  // The largest scale maps to the negative end, which has one more code than the positive.
  out.d = fp32_to_fp16(max / static_cast<float>(scale_lo));
  const float d = fp16_to_fp32(out.d);
  const float inv = (d != 0.0f && std::isfinite(d)) ? 1.0f / d : 0.0f;
  for (int s = 0; s < 16; ++s) {
    out.scale[s] = static_cast<int8_t>(round_clamp(scales[s] * inv, scale_lo, scale_hi));
    assign_symmetric(x + 16 * s, 16, lo, hi, d * static_cast<float>(out.scale[s]), out.L + 16 * s);
  }
  return out;
}

}  // namespace

void dequantize_q3_k(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    int8_t scales[16];
    unpack_scales_q3_k(b.scales, scales);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const int group = e / 32;  // 0..7: selects the hmask bit and the 2-bit field
      const int l = e % 32;
      const int low = (b.qs[32 * (group / 4) + l] >> (2 * (group % 4))) & 3;
      const int q = low - (((b.hmask[l] >> group) & 1) ? 0 : 4);
      const float dl = d * static_cast<float>(scales[e / 16]);
      y[e] = dl * static_cast<float>(q);
    }
  }
}

void quantize_q3_k(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const SymmetricSuperBlock q = quantize_symmetric_super(src + i * kQK_K, -4, 3, -32, 31);
    BlockQ3_K b{};
    b.d = q.d;
    for (int s = 0; s < 16; ++s) {
      const int v = q.scale[s] + 32;  // 6 bits
      if (s < 8) {
        b.scales[s] |= static_cast<uint8_t>(v & 0x0f);
      } else {
        b.scales[s - 8] |= static_cast<uint8_t>((v & 0x0f) << 4);
      }
      b.scales[8 + s % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (s / 4)));
    }
    for (int e = 0; e < kQK_K; ++e) {
      const int code = q.L[e] + 4;  // 0..7: bit 2 is the hmask bit
      const int group = e / 32;
      const int l = e % 32;
      b.qs[32 * (group / 4) + l] |= static_cast<uint8_t>((code & 3) << (2 * (group % 4)));
      b.hmask[l] |= static_cast<uint8_t>((code >> 2) << group);
    }
    store_block(dst, i, b);
  }
}

namespace {

// Positions of element e of a q6_K block: its ql byte, nibble shift, qh byte and bit shift.
struct Q6Position {
  int ql;
  int ql_shift;
  int qh;
  int qh_shift;
};

Q6Position q6_position(int e) {
  const int half = e / 128;
  const int quarter = (e % 128) / 32;
  const int l = e % 32;
  return {64 * half + l + 32 * (quarter % 2), 4 * (quarter / 2), 32 * half + l, 2 * quarter};
}

}  // namespace

void dequantize_q6_k(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const Q6Position p = q6_position(e);
      const int q = (((b.ql[p.ql] >> p.ql_shift) & 0x0f) | (((b.qh[p.qh] >> p.qh_shift) & 3) << 4)) - 32;
      y[e] = d * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q);
    }
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const SymmetricSuperBlock q = quantize_symmetric_super(src + i * kQK_K, -32, 31, -128, 127);
    BlockQ6_K b{};
    b.d = q.d;
    for (int s = 0; s < 16; ++s) b.scales[s] = q.scale[s];
    for (int e = 0; e < kQK_K; ++e) {
      const int code = q.L[e] + 32;  // 0..63
      const Q6Position p = q6_position(e);
      b.ql[p.ql] |= static_cast<uint8_t>((code & 0x0f) << p.ql_shift);
      b.qh[p.qh] |= static_cast<uint8_t>((code >> 4) << p.qh_shift);
    }
    store_block(dst, i, b);
  }
}

void dequantize_q8_k(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ8_K>(src, i);
    for (int e = 0; e < kQK_K; ++e) dst[i * kQK_K + e] = b.d * static_cast<float>(b.qs[e]);
  }
}

void quantize_q8_k(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    const float max = signed_absmax(x, kQK_K);
    const float amax = std::fabs(max);
    BlockQ8_K b{};
    // The largest element maps to -128 (a float scale, so no rounding of d to worry about).
    if (amax > 0.0f && std::isfinite(amax)) {
      const float iscale = -128.0f / max;
      for (int e = 0; e < kQK_K; ++e) b.qs[e] = static_cast<int8_t>(round_clamp(iscale * x[e], -128, 127));
      b.d = 1.0f / iscale;
    }
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[16 * s + l];
      b.bsums[s] = static_cast<int16_t>(sum);
    }
    store_block(dst, i, b);
  }
}

}  // namespace keel::tensor::detail
