// Row conversion f32 -> IEEE half with F16C where the machine has it. vcvtps2ph with
// round-to-nearest-even gives fp32_to_fp16's bits for every input: the same rounding of
// normals and subnormals, overflow to inf, and a NaN quieted with its payload's top bits
// (checked on all 2^32 inputs once; tests/tensor/types_test.cpp checks the edges and a
// random sample on every run). The KV cache stores each new K/V row through this (1-2% of
// a prompt's time with the scalar loop).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/cpu.h"
#include "tensor/types.h"

namespace keel::tensor {
namespace {

void fp32_to_fp16_scalar(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

// Only intrinsics inside: nothing instantiated here may be shared with baseline code.
__attribute__((target("avx2,f16c"))) int64_t fp32_to_fp16_f16c(const float* src, uint8_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), h);
  }
  return i;
}

}  // namespace

void fp32_to_fp16_row(const float* src, void* dst, int64_t n, RowIsa isa) {
  auto* p = static_cast<uint8_t*>(dst);
  int64_t done = 0;
  if (isa == RowIsa::kAuto && cpu_features().f16c && cpu_features().avx2) done = fp32_to_fp16_f16c(src, p, n);
  fp32_to_fp16_scalar(src + done, p + 2 * done, n - done);
}

}  // namespace keel::tensor
