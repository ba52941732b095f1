#include "kernels/widen.h"

#include <immintrin.h>

#include <cstring>

#include "core/cpu.h"
#include "tensor/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,f16c")

namespace keel::kernels {
namespace {

void widen_f16(const uint8_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
  }
  if (i < n) tensor::dequantize_row(tensor::DType::kF16, src + 2 * i, dst + i, n - i);
}

void widen_bf16(const uint8_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  if (i < n) tensor::dequantize_row(tensor::DType::kBF16, src + 2 * i, dst + i, n - i);
}

void widen_q8_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = src + b * sizeof(tensor::BlockQ8_0);
    uint16_t h;
    std::memcpy(&h, blk, 2);
    const __m256 d = _mm256_set1_ps(tensor::fp16_to_fp32(h));
    for (int j = 0; j < 32; j += 8) {
      const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + j)));
      _mm256_storeu_ps(dst + 32 * b + j, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
    }
  }
}

bool simd_ok() {
  static const bool ok = cpu_features().avx2 && cpu_features().f16c;
  return ok;
}

}  // namespace

void widen_row(tensor::DType type, const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  if (simd_ok()) {
    switch (type) {
      case tensor::DType::kF16: return widen_f16(s, dst, n);
      case tensor::DType::kBF16: return widen_bf16(s, dst, n);
      case tensor::DType::kQ8_0:
        if (n % 32 == 0) return widen_q8_0(s, dst, n);
        break;
      default: break;
    }
  }
  tensor::dequantize_row(type, src, dst, n);
}

}  // namespace keel::kernels

#pragma GCC pop_options
