// Dispatch of matmul_half_range to the widest implementation this machine runs, and the
// scalar reduction tail both implementations share.
#include "kernels/matmul_half.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu.h"
#include "kernels/matmul.h"
#include "kernels/matmul_half_internal.h"
#include "tensor/types.h"

// Only the fused multiply-adds written out; a contracted sum would change the bits.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels {
namespace half {

float add_tail(float sum, const uint8_t* row, bool bf16, const float* x, int64_t k0, int64_t n) {
  for (int64_t k = k0; k < n; ++k) {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, 2);
    sum = std::fma(bf16 ? tensor::bf16_to_fp32(h) : tensor::fp16_to_fp32(h), x[k], sum);
  }
  return sum;
}

float* scratch_floats(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n + 16) buf.resize(n + 16);
  const auto p = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<float*>((p + 63) & ~uintptr_t{63});
}

}  // namespace half

bool half_kernel_available(const WeightMatrix& w) {
  const CpuFeatures& f = cpu_features();
  return (w.type == tensor::DType::kF16 || w.type == tensor::DType::kBF16) && f.avx2 && f.f16c && f.fma;
}

void matmul_half_range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o_begin,
                       int64_t o_end) {
  static const bool wide = [] {
    const CpuFeatures& f = cpu_features();
    return f.avx512f && f.avx512bw && f.avx512vl;
  }();
  if (o_begin >= o_end || n_rows <= 0) return;
  const bool bf16 = w.type == tensor::DType::kBF16;
  if (wide) {
    (bf16 ? half::range_avx512<true> : half::range_avx512<false>)(w, x, n_rows, y, o_begin, o_end);
  } else {
    (bf16 ? half::range_avx2<true> : half::range_avx2<false>)(w, x, n_rows, y, o_begin, o_end);
  }
}

}  // namespace keel::kernels
