// Shared by the ISA implementations of matmul_half_range (matmul_half_avx2.cpp,
// matmul_half_avx512.cpp); not a public interface. Everything here is compiled for the
// baseline ISA (matmul_half.cpp), so an ISA file may call it without leaking its own
// instructions into code another path runs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel::kernels {
struct WeightMatrix;
}

namespace keel::kernels::half {

// Adds the reduction tail k in [k0, n) to `sum` in ascending order, one fused multiply-add
// each (dot_f32's tail). `row` is the weight row in its stored f16/bf16 form.
float add_tail(float sum, const uint8_t* row, bool bf16, const float* x, int64_t k0, int64_t n);

// A 64-byte aligned buffer of at least n floats, one per thread, reused (no allocation
// once grown); valid until the thread's next call. Here rather than in an ISA file so the
// std::vector code it instantiates is baseline code any caller may share.
float* scratch_floats(size_t n);

// Rows [o_begin, o_end) of y[n_rows][w.n_out] for `w` of type bf16 (kBf16) or f16: same
// contract and bits as matmul_half_range. The AVX-512 one needs avx512f+bw+vl; both need
// avx2+f16c. Instantiated for both types in their files.
template <bool kBf16>
void range_avx2(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o_begin,
                int64_t o_end);
template <bool kBf16>
void range_avx512(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o_begin,
                  int64_t o_end);

}  // namespace keel::kernels::half
