// Glue between kernels::matmul (matmul.h) and the integer path (qmatmul.h): what matmul.cpp
// calls. Contracts as in matmul.h; thread-safety as kernels::matmul.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tensor/types.h"

namespace keel {
class ThreadPool;
}

namespace keel::kernels {
struct WeightMatrix;
namespace q {
class PackCache;
class PackArena;
}

// A pack cache for a view of `type`, or nullptr when the type has no integer path.
std::shared_ptr<q::PackCache> make_pack_cache(tensor::DType type);

// Packs `w` now (at load) instead of on its first product, into `arena` when given (see
// q::PackedMatrix); a no-op where nothing packs.
void prepare_weights(const WeightMatrix& w, const std::shared_ptr<q::PackArena>& arena = nullptr);
// The bytes prepare_weights(w) would pack (0 where nothing packs): to size an arena.
size_t prepared_bytes(const WeightMatrix& w);

// Runs y = x · Wᵀ on a fast path and returns true — the integer path (qmatmul.h) or the
// f16/bf16 SIMD twin of the reference (matmul_half.h) — or returns false (nothing done)
// when none applies (MatmulPath::kReference, a type without one).
bool matmul_fast(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, ThreadPool* pool);

// n (1..kMaxSharedInput, matmul.h) matrices of one input, y_i = x · W_iᵀ, with the bits of n
// matmul_fast calls: x quantized (or, for BF16 on the pair dot, rounded) once, every matrix's
// tasks in one job. Returns false (nothing done) unless every matrix is packed for the SIMD
// integer path with one activation format, or every one is BF16 on the pair dot, with the
// same n_in; the caller then multiplies them one by one.
bool matmul_fast_shared_input(const WeightMatrix* const* ws, const float* x, int64_t n_rows, float* const* ys,
                              int n, ThreadPool* pool);

}  // namespace keel::kernels
