// Dot products in one fixed reduction order. Every kernel that reduces over a row uses
// these, so a result never depends on batch size, chunking or thread count.
//
// Contract: pure functions, thread-safe. n >= 0; pointers may be unaligned. The order is:
// 8 interleaved partial sums (element i goes to sum i % 8), combined pairwise
// ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)), then the tail in ascending order. Every product is
// accumulated with one fused multiply-add (s = fma(a, b, s): one rounding), in the sums and
// in the tail. A SIMD twin must reproduce exactly this order (8 lanes, fma) to stay bitwise
// equal; nothing else in a reduction may be contracted.
#pragma once

#include <cstdint>

namespace keel::kernels {

float dot_f32(const float* a, const float* b, int64_t n);

// Sum of squares in double (norms want the accuracy; order ascending).
double sum_squares(const float* x, int64_t n);

}  // namespace keel::kernels
