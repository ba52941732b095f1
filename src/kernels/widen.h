// SIMD twins of the exact row conversions the attention kernels need per key / value row
// (f16, bf16, q8_0 → f32): the same values as tensor::dequantize_row (the conversions are
// exact, and q8_0 is one float multiply per element), so swapping them in changes no bit.
// Other types fall back to tensor::dequantize_row. Pure, thread-safe.
#pragma once

#include <cstdint>

#include "tensor/types.h"

namespace keel::kernels {

void widen_row(tensor::DType type, const void* src, float* dst, int64_t n);

}  // namespace keel::kernels
