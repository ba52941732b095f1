// Integer matmul of block-quantized weights by 8-bit quantized activations — the fast path
// behind kernels::matmul (matmul.h) for q4_0, q8_0, q4_K, q5_K and q6_K weights.
//
// The arithmetic per output element y[r][o] is defined once, here, and every
// implementation (scalar twin, AVX2, AVX-512 VNNI) performs exactly it, so they agree
// bitwise with each other and a row's result never depends on the batch:
//   for each weight block b, ascending:
//     isum  = exact integer dot of the block's quants with the activation quants
//     q4_0 / q8_0:  acc = fma(dw_b * dx_b, float(isum), acc)
//     q4_K, q5_K:   A = sum_j sc_j * isum_j,  B = sum_j m_j * xsum32_j   (exact ints;
//                   q5_K's quants are 5-bit: nibble | fifth bit << 4)
//                   acc = fma(d_b * dx_b, float(A), acc); acc = fma(-(dmin_b * dx_b), float(B), acc)
//     q6_K:         A = sum_j sc_j * (isum16_j - 32 * xsum16_j)
//                   acc = fma(d_b * dx_b, float(A), acc)
//   y = acc (acc starts at +0).
// The SIMD kernels get there with 16 weight rows interleaved per "panel" (repack.h): one
// vector lane per output row, so there is no horizontal sum and no lane-order question.
//
// Thread-safety: all functions are pure over their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/quantize_act.h"
#include "tensor/types.h"

namespace keel::kernels::q {

inline constexpr int kPanelRows = 16;

// A GGUF block read by copy (rows in a file need not be aligned for the struct).
template <typename Block>
Block load_block(const uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof b);
  return b;
}  // weight rows interleaved per panel (one per lane)

// Instruction-set family of a kernel.
enum class Isa { kScalar, kAvx2, kAvx512 };
const char* isa_name(Isa isa);
// The best family this machine (as capped by KEEL_CPU) supports.
Isa best_isa();

// Layout facts of one weight type on the integer path.
struct Format {
  tensor::DType type;
  ActFormat act;
  int64_t block;             // weight elements per block (32 or 256)
  size_t src_block_bytes;    // bytes of one GGUF block
  size_t panel_block_bytes;  // bytes of one block of a 16-row panel (repack.h)
};
// The format of `type`, or nullptr when it has no integer path.
const Format* format_for(tensor::DType type);

// Scalar twin on the ORIGINAL (GGUF) row layout: y = the defined arithmetic for weight
// row `w_row` (n_in elements) against activation row r. The oracle of every SIMD kernel.
float twin_dot(tensor::DType type, const uint8_t* w_row, const ActRows& a, int64_t r);

// The packed bytes the caller's next panel call will read. A kernel pulls them toward L2
// while it computes, paced evenly over its blocks and row tiles (PrefetchPacer), so that on
// a multi-row decode step (compute- and memory-heavy at once) the next call's weights arrive
// during this call's arithmetic instead of stalling the next call. A hint: never read for
// results. Empty: nothing to prefetch.
struct NextPanels {
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

// One row tile's share of a NextPanels range, paced over the tile's blocks: at_block(b)
// issues the prefetches due by block b (b ascending from 0 to n_blocks - 1).
class PrefetchPacer {
 public:
  PrefetchPacer() = default;
  // Tile `tile` of `n_tiles` (each walking `n_blocks` blocks) takes an equal share of `next`.
  PrefetchPacer(NextPanels next, int tile, int n_tiles, int64_t n_blocks) : n_blocks_(n_blocks) {
    if (next.data == nullptr || next.bytes == 0 || n_tiles <= 0 || n_blocks <= 0) return;
    const auto addr = reinterpret_cast<uintptr_t>(next.data);
    const int64_t lines = static_cast<int64_t>((addr % 64 + next.bytes + 63) / 64);
    const int64_t l0 = lines * tile / n_tiles, l1 = lines * (tile + 1) / n_tiles;
    first_ = reinterpret_cast<const char*>(addr - addr % 64) + 64 * l0;
    lines_ = l1 - l0;
  }
  // The share: lines() cache lines from first() (64-aligned).
  const char* first() const { return first_; }
  int64_t lines() const { return lines_; }
  // The lines at_block(b) asks for: [first_line(b), first_line(b + 1)) of the share.
  int64_t first_line(int64_t b) const { return b * lines_ / n_blocks_; }
  void at_block(int64_t b) const {
    if (lines_ == 0) return;
    const int64_t end = first_line(b + 1);
    for (int64_t l = first_line(b); l < end; ++l) __builtin_prefetch(first_ + 64 * l, 0, 2);
  }

 private:
  const char* first_ = nullptr;
  int64_t lines_ = 0, n_blocks_ = 1;
};

// The pacer of a call with nothing to prefetch.
struct NoPrefetch {
  void at_block(int64_t) const {}
};

// A panel kernel: for activation rows [r0, r1) computes y[r * ldy + i] for i < n_valid
// (<= 16) from one packed panel of `n_blocks` blocks, prefetching `next` as it goes.
using PanelFn = void (*)(const uint8_t* panel, int64_t n_blocks, const ActRows& a, int64_t r0,
                         int64_t r1, float* y, int64_t ldy, int n_valid, NextPanels next);

// The panel kernel of `isa` for `type`, or nullptr (scalar has none: it uses twin_dot).
PanelFn panel_kernel(Isa isa, tensor::DType type);

// A kernel over two adjacent panels at once (`panel` and the one after it in the packed
// matrix, outputs y[.. 16) and y[16 ..); n_valid counts the second panel's lanes): each
// activation load then feeds both, for prefill. Same per-lane arithmetic as panel_kernel,
// so the same bits. nullptr where there is none.
PanelFn panel_pair_kernel(Isa isa, tensor::DType type);

// Activation rows from which panel_pair_kernel(isa, type) is the faster choice (INT64_MAX
// where there is none). A pair shares each activation load between two panels but holds
// twice the accumulators, so its row tile is smaller and each weight block is unpacked
// more often; where the tile is half the single kernel's (q5_K), batches of a few decode
// rows run faster on single panels.
int64_t panel_pair_min_rows(Isa isa, tensor::DType type);

// Per-ISA tables (defined in qmatmul_avx512.cpp / qmatmul_avx2.cpp).
PanelFn panel_kernel_avx512(tensor::DType type);
PanelFn panel_kernel_avx2(tensor::DType type);
PanelFn panel_pair_kernel_avx512(tensor::DType type);
int64_t panel_pair_min_rows_avx512(tensor::DType type);

}  // namespace keel::kernels::q
