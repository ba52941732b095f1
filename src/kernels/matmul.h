// Matrix products of a weight matrix in its stored type by f32 activations.
//
// WeightMatrix is a non-owning view (usually into a GGUF mapping): n_out rows of n_in
// elements of `type`, row r at data + r * row_stride. It is valid as long as the memory
// it points to.
//
// matmul(): y[r][o] = dot(W row o, x[r]) for r < n_rows, o < n_out.
//   x: [n_rows][n_in] f32, y: [n_rows][n_out] f32 (must not alias x).
// Block-quantized types with an integer path (q4_0, q8_0, q4_K, q5_K, q6_K) quantize x per row to
// 8 bits and use integer dot products (kernels/qmatmul.h; kernels/matmul_path.h selects);
// the others, and MatmulPath::kReference, take the f32 reference below.
// Batch invariance: each weight row is dequantized (tensor::dequantize_row, the scalar
// reference) into a per-thread scratch row and dotted with every batch row by dot_f32, so
// y[r][o] is computed by the same operations whatever n_rows is. Work is split across
// output rows only (never across the reduction), so thread count does not matter either.
// Thread-safety: concurrent calls on distinct outputs are safe; `pool` is driven by the
// caller's thread (nullptr runs inline).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/types.h"

namespace keel {
class ThreadPool;
}

namespace keel::kernels {
namespace q {
class PackCache;  // kernels/repack.h
}

struct WeightMatrix {
  tensor::DType type = tensor::DType::kF32;
  const uint8_t* data = nullptr;
  int64_t n_in = 0;       // elements per row (the reduction dimension)
  int64_t n_out = 0;      // rows
  size_t row_stride = 0;  // bytes between rows (tensor::row_bytes(type, n_in) when packed)
  // Interleaved copy for the SIMD integer kernels (kernels/qmatmul.h), built on first use
  // and shared by copies of the view; null (set by packed() only) means the kernels run
  // on the original rows instead, with the same results.
  std::shared_ptr<q::PackCache> pack;

  // A view of `n_out` packed rows; throws keel::Error(kInvalidArgument) when n_in is not a
  // multiple of the type's block size.
  static WeightMatrix packed(tensor::DType type, const void* data, int64_t n_in, int64_t n_out);
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_stride; }
};

// Dequantizes weight row r into dst[n_in] (a plain copy for f32).
void weight_row(const WeightMatrix& w, int64_t r, float* dst);

void matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, ThreadPool* pool);

// The most matrices matmul_shared_input takes as one job (more run one by one).
constexpr int kMaxSharedInput = 4;

// ys[i] = matmul(*ws[i], x) for the n matrices of one input (a layer's q/k/v or gate/up
// projections), bitwise as n matmul() calls; where the integer path allows, x is quantized
// once and all the products run as one job on the pool (one dispatch, one shared finish).
// Every ws[i] must have the same n_in (else keel::Error kInvalidArgument); ys[i]:
// [n_rows][ws[i]->n_out], none aliasing x.
void matmul_shared_input(const WeightMatrix* const* ws, const float* x, int64_t n_rows, float* const* ys, int n,
                         ThreadPool* pool);

}  // namespace keel::kernels
