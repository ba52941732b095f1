// Internal to src/tensor: per-type block converters behind dequantize_row/quantize_row
// (which validate arguments first) and small helpers shared by the quantizers.
// `nb` is the number of blocks; src/dst are unaligned byte buffers of nb blocks.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace keel::tensor::detail {

void dequantize_q4_0(const void* src, float* dst, int64_t nb);
void dequantize_q4_1(const void* src, float* dst, int64_t nb);
void dequantize_q5_0(const void* src, float* dst, int64_t nb);
void dequantize_q5_1(const void* src, float* dst, int64_t nb);
void dequantize_q8_0(const void* src, float* dst, int64_t nb);
void dequantize_q8_1(const void* src, float* dst, int64_t nb);
void dequantize_q2_k(const void* src, float* dst, int64_t nb);
void dequantize_q3_k(const void* src, float* dst, int64_t nb);
void dequantize_q4_k(const void* src, float* dst, int64_t nb);
void dequantize_q5_k(const void* src, float* dst, int64_t nb);
void dequantize_q6_k(const void* src, float* dst, int64_t nb);
void dequantize_q8_k(const void* src, float* dst, int64_t nb);
void dequantize_mxfp4(const void* src, float* dst, int64_t nb);

void quantize_q4_0(const float* src, void* dst, int64_t nb);
void quantize_q4_1(const float* src, void* dst, int64_t nb);
void quantize_q5_0(const float* src, void* dst, int64_t nb);
void quantize_q5_1(const float* src, void* dst, int64_t nb);
void quantize_q8_0(const float* src, void* dst, int64_t nb);
void quantize_q8_1(const float* src, void* dst, int64_t nb);
void quantize_q2_k(const float* src, void* dst, int64_t nb);
void quantize_q3_k(const float* src, void* dst, int64_t nb);
void quantize_q4_k(const float* src, void* dst, int64_t nb);
void quantize_q5_k(const float* src, void* dst, int64_t nb);
void quantize_q6_k(const float* src, void* dst, int64_t nb);
void quantize_q8_k(const float* src, void* dst, int64_t nb);
void quantize_mxfp4(const float* src, void* dst, int64_t nb);

// Rounds to nearest (ties to even) and clamps to [lo, hi]; NaN maps to lo. Never UB on
// any input. |lo|, |hi| < 2^22: adding 1.5 * 2^23 leaves the rounded integer in the low
// mantissa bits, which is much faster than a libm call on baseline x86-64.
// Branch-free (the comparisons compile to max/min), so the quantizers' loops vectorize.
inline int round_clamp(float v, int lo, int hi) {
  v = v > static_cast<float>(lo) ? v : static_cast<float>(lo);  // NaN fails: lo
  v = v < static_cast<float>(hi) ? v : static_cast<float>(hi);
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// The element with the largest magnitude, sign kept (0 for an all-zero or all-NaN block).
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// Reads / writes block i of type B from an unaligned buffer.
template <typename B>
B load_block(const void* src, int64_t i) {
  B b;
  std::memcpy(&b, static_cast<const uint8_t*>(src) + i * static_cast<int64_t>(sizeof(B)), sizeof(B));
  return b;
}

template <typename B>
void store_block(void* dst, int64_t i, const B& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + i * static_cast<int64_t>(sizeof(B)), &b, sizeof(B));
}

}  // namespace keel::tensor::detail
