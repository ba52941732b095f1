// Activation rows quantized to 8 bits for the integer matmul paths (kernels/qmatmul.h).
//
// Two formats, both symmetric int8 with one f32 scale per block:
//   kQ8x32  — blocks of 32 (for q4_0 / q8_0 weights); sum32 = sum of q per block.
//   kQ8x256 — blocks of 256 (for K-quant weights); sum16 / sum32 = sums per 16 / 32.
// Per block: amax = max |x|, d = amax / 127, q = round-half-even(clamp(x * (127 / amax))).
// A row's blocks depend only on that row (batch invariance). NaN/Inf in a block give a
// non-finite d, so the product is non-finite too (no UB, no crash).
//
// ActBuffer owns the storage and grows only (callers keep one per thread and reuse it, so a
// decode step allocates nothing). ActRows is a non-owning view of it.
// Thread-safety: ActBuffer is not shared between threads while being filled; views of a
// filled buffer may be read concurrently.
#pragma once

#include <cstdint>
#include <vector>

namespace keel::kernels::q {

enum class ActFormat { kQ8x32, kQ8x256 };

inline int64_t act_block(ActFormat f) { return f == ActFormat::kQ8x32 ? 32 : 256; }

struct ActRows {
  ActFormat format = ActFormat::kQ8x32;
  int64_t n_in = 0;
  int64_t n_rows = 0;
  const int8_t* qs = nullptr;     // [n_rows][n_in]
  const float* d = nullptr;       // [n_rows][n_in / block]
  const int16_t* sum16 = nullptr;  // [n_rows][n_in / 16]   (kQ8x256 only)
  const int16_t* sum32 = nullptr;  // [n_rows][n_in / 32]

  const int8_t* row_qs(int64_t r) const { return qs + r * n_in; }
  const float* row_d(int64_t r) const { return d + r * (n_in / act_block(format)); }
  const int16_t* row_sum16(int64_t r) const { return sum16 + r * (n_in / 16); }
  const int16_t* row_sum32(int64_t r) const { return sum32 + r * (n_in / 32); }
};

class ActBuffer {
 public:
  // Quantizes x[n_rows][n_in] (n_in a multiple of the block) and returns the view.
  // Throws keel::Error(kInvalidArgument) on a bad n_in.
  ActRows quantize(const float* x, int64_t n_rows, int64_t n_in, ActFormat format);
  // Sizes the buffer for n_rows rows; quantize_rows() then fills rows [r0, r1) (which may
  // run on several threads for disjoint ranges).
  ActRows prepare(int64_t n_rows, int64_t n_in, ActFormat format);
  void quantize_rows(const float* x, int64_t r0, int64_t r1);

 private:
  int64_t n_in_ = 0;
  ActFormat format_ = ActFormat::kQ8x32;
  std::vector<int8_t> qs_;
  std::vector<float> d_;
  std::vector<int16_t> sum16_;
  std::vector<int16_t> sum32_;
};

// One block of n (32 or 256) values: writes q[n] and returns d. The SIMD version where the
// machine has one; _scalar is its oracle (same bits).
float quantize_block_q8(const float* x, int n, int8_t* q);
float quantize_block_q8_scalar(const float* x, int n, int8_t* q);

}  // namespace keel::kernels::q
