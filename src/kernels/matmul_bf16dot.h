// BF16 weights by activations rounded to BF16, on the AVX512-BF16 pair dot (vdpbf16ps): the
// fast path of kernels::matmul for BF16 weights on machines that have the instruction (as
// llama.cpp does there: its activation type for BF16 weights is BF16). Twice the multiply
// rate of widening the weights to f32, for a rounding of the activations to 8 significant
// bits (relative error <= 2^-9 per element; the weights are used exactly).
//
// The arithmetic per output y[r][o], defined here and performed bitwise alike by the scalar
// twin and the AVX-512 kernel, for every batch size, tile and thread count:
//   xb = x rounded to bf16 (tensor::fp32_to_bf16: nearest even; a NaN stays a NaN)
//   16 lane sums L[j] = +0; for each chunk c of 32 elements, ascending (the last one
//   zero-padded), with k = 32c + 2j:
//     L[j] = L[j] + w[k+1]·xb[k+1], then L[j] = L[j] + w[k]·xb[k]
//     (products exact; each sum rounded to nearest even; denormal bf16 inputs read as zero
//      and denormal sums flushed to zero, as the instruction does)
//   y = L[j] + L[j+8] (j < 8), then the same 4, 2 and 1 apart (f32 adds).
// Thread-safety: pure over the arguments; scratch is per thread.
#pragma once

#include <cstdint>

namespace keel::kernels {
struct WeightMatrix;

// True when `w` is BF16 and this machine (as capped by KEEL_CPU) has AVX-512 BF16.
bool bf16dot_available(const WeightMatrix& w);

// Activations rounded for this path: rows of `stride` bf16 values (n_in rounded up to 32,
// zero-padded). Owned by the calling thread's scratch: valid until its next call.
struct Bf16Rows {
  uint16_t* data = nullptr;  // [n_rows][stride]
  int64_t stride = 0;
};
Bf16Rows bf16dot_round_rows(const float* x, int64_t n_rows, int64_t n_in);
// The same in two steps, so rows can be rounded on several threads: size the calling
// thread's scratch for n_rows, then fill rows [r0, r1) of it from x (rows of n_in floats);
// disjoint ranges may be filled concurrently.
Bf16Rows bf16dot_rows_buffer(int64_t n_rows, int64_t n_in);
void bf16dot_round_into(const Bf16Rows& out, const float* x, int64_t n_in, int64_t r0, int64_t r1);

// Rows [o_begin, o_end) of y[n_rows][w.n_out] by the arithmetic above. _range runs the
// AVX-512 kernel (bf16dot_available(w) must hold); _twin is the scalar oracle.
void bf16dot_range(const WeightMatrix& w, const Bf16Rows& x, int64_t n_rows, float* y, int64_t o_begin,
                   int64_t o_end);
void bf16dot_range_twin(const WeightMatrix& w, const Bf16Rows& x, int64_t n_rows, float* y, int64_t o_begin,
                        int64_t o_end);

namespace bf16dot {
// The AVX-512 implementations (matmul_bf16dot_avx512.cpp); callers go through the above.
void round_rows_avx512(const float* x, int64_t n_rows, int64_t n_in, uint16_t* out, int64_t stride);
void range_avx512(const WeightMatrix& w, const Bf16Rows& x, int64_t n_rows, float* y, int64_t o_begin,
                  int64_t o_end);
}  // namespace bf16dot

}  // namespace keel::kernels
