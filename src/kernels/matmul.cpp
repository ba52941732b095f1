#include "kernels/matmul.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/dot.h"
#include "kernels/qmatmul_driver.h"

namespace keel::kernels {

WeightMatrix WeightMatrix::packed(tensor::DType type, const void* data, int64_t n_in,
                                  int64_t n_out) {
  WeightMatrix w;
  w.type = type;
  w.data = static_cast<const uint8_t*>(data);
  w.n_in = n_in;
  w.n_out = n_out;
  w.row_stride = tensor::row_bytes(type, n_in);
  w.pack = make_pack_cache(type);
  return w;
}

void weight_row(const WeightMatrix& w, int64_t r, float* dst) {
  if (r < 0 || r >= w.n_out) {
    throw Error(ErrorCode::kInvalidArgument,
                "weight_row: row " + std::to_string(r) + " outside [0, " +
                    std::to_string(w.n_out) + ")");
  }
  if (w.type == tensor::DType::kF32) {
    std::memcpy(dst, w.row(r), static_cast<size_t>(w.n_in) * sizeof(float));
  } else {
    tensor::dequantize_row(w.type, w.row(r), dst, w.n_in);
  }
}

namespace {

// Output rows per chunk: enough to amortize dispatch, small enough to balance 2+ threads.
constexpr int64_t kRowsPerChunk = 16;
// Below this many multiply-adds a product runs inline: waking workers costs more.
// (Only where work runs changes, never its order, so results are unaffected.)
constexpr int64_t kMinParallelWork = 1 << 14;

void matmul_range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                  int64_t o_begin, int64_t o_end) {
  // Rows of other types are widened into per-thread scratch (f32 rows are read in place,
  // so an f32 model's workers never allocate).
  thread_local std::vector<float> scratch;
  if (w.type != tensor::DType::kF32 && static_cast<int64_t>(scratch.size()) < w.n_in) scratch.resize(w.n_in);
  const int64_t k = w.n_in;
  for (int64_t o = o_begin; o < o_end; ++o) {
    const float* wr;
    if (w.type == tensor::DType::kF32) {
      wr = reinterpret_cast<const float*>(w.row(o));
    } else {
      tensor::dequantize_row(w.type, w.row(o), scratch.data(), k);
      wr = scratch.data();
    }
    for (int64_t r = 0; r < n_rows; ++r) y[r * w.n_out + o] = dot_f32(wr, x + r * k, k);
  }
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, ThreadPool* pool) {
  if (n_rows <= 0 || w.n_out <= 0) return;
  if (!w.data || w.n_in <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "matmul: empty weight matrix");
  }
  if (matmul_fast(w, x, n_rows, y, pool)) return;
  if (pool == nullptr || pool->size() <= 1 || w.n_out <= kRowsPerChunk ||
      w.n_out * w.n_in * n_rows < kMinParallelWork) {
    matmul_range(w, x, n_rows, y, 0, w.n_out);
    return;
  }
  pool->parallel_for(w.n_out, kRowsPerChunk, [&](int64_t b, int64_t e) {
    matmul_range(w, x, n_rows, y, b, e);
  });
}

void matmul_shared_input(const WeightMatrix* const* ws, const float* x, int64_t n_rows, float* const* ys, int n,
                         ThreadPool* pool) {
  if (n_rows <= 0 || n <= 0) return;
  for (int i = 0; i < n; ++i) {
    if (!ws[i]->data || ws[i]->n_in <= 0) throw Error(ErrorCode::kInvalidArgument, "matmul: empty weight matrix");
    if (ws[i]->n_in != ws[0]->n_in) {
      throw Error(ErrorCode::kInvalidArgument, "matmul_shared_input: matrices of one input differ in n_in");
    }
  }
  if (matmul_fast_shared_input(ws, x, n_rows, ys, n, pool)) return;
  for (int i = 0; i < n; ++i) matmul(*ws[i], x, n_rows, ys[i], pool);
}

}  // namespace keel::kernels
