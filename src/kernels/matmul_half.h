// F16 / BF16 weights by f32 activations (AVX2 + F16C, or AVX-512): the reference arithmetic of
// kernels::matmul (each weight row widened to f32 exactly, then dot_f32's order: 8
// interleaved partial sums, fused multiply-add, pairwise combine, ascending tail) done with 8-lane
// vectors, so the results are bitwise those of the scalar reference — for 1 row or n.
// kernels::matmul sends BF16 weights to matmul_bf16dot.h's pair-dot path instead where the
// machine has AVX-512 BF16 (twice the multiply rate, activations rounded to bf16).
// Runs the AVX-512 implementation where the machine has avx512f/bw/vl, else AVX2 (both in
// matmul_half_internal.h); KEEL_CPU caps the choice.
// Rows [o_begin, o_end) of y[n_rows][w.n_out]; thread-safety as kernels::matmul (each
// thread uses its own widening scratch, which stays allocated for reuse).
#pragma once

#include <cstdint>

namespace keel::kernels {
struct WeightMatrix;

// True when this machine has the instructions and `w` is f16 or bf16.
bool half_kernel_available(const WeightMatrix& w);
void matmul_half_range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o_begin,
                       int64_t o_end);

}  // namespace keel::kernels
