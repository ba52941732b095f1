// AVX2 twin of kernels::dot_f32 (dot.h): the same 8 interleaved partial sums (one lane
// each), fused multiply-add, the same pairwise combine and ascending tail, so the same
// bits. dot.cpp dispatches to it when the machine has AVX2 and FMA. Pure, thread-safe.
#pragma once

#include <cstdint>

namespace keel::kernels {

bool dot_simd_available();
float dot_f32_avx2(const float* a, const float* b, int64_t n);

}  // namespace keel::kernels
