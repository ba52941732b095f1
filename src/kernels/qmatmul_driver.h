// Glue between kernels::matmul (matmul.h) and the integer path (qmatmul.h): what matmul.cpp
// calls. Contracts as in matmul.h; thread-safety as kernels::matmul.
#pragma once

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
}

// A pack cache for a view of `type`, or nullptr when the type has no integer path.
std::shared_ptr<q::PackCache> make_pack_cache(tensor::DType type);

// Packs `w` now (at load) instead of on its first product; a no-op where nothing packs.
void prepare_weights(const WeightMatrix& w);

// Runs y = x · Wᵀ on the integer path and returns true, or returns false (nothing done)
// when the path is not taken (reference mode, a type without it).
bool matmul_integer(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, ThreadPool* pool);

}  // namespace keel::kernels
