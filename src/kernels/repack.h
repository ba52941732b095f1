// Weight repacking for the integer matmul kernels (qmatmul.h): 16 rows interleaved per
// panel so a vector lane holds one output row.
//
// Panel layout, per block b (blocks ascending, panels of rows [16p, 16p + 16)):
//   q8_0 (544 B):  d[16] f16 | for group g < 8: [row 0..15][4 bytes] = q[4g + i] ^ 0x80
//                  (stored unsigned, q + 128, for u8 x s8 dot instructions)
//   q4_0 (288 B):  d[16] f16 | for k < 4: [row][4 bytes] = qs[4k + i]
//                  (low nibble = element 4k + i, high nibble = element 16 + 4k + i)
//   q4_K (2368 B): d[16] f16 | dmin[16] f16 | sc[8][16] u8 | m[4][16][2] u8 (pairs 2k, 2k+1)
//                  | for c < 4, k < 8: [row][4 bytes] = qs[32c + 4k + i]
//                  (low nibble: sub-block 2c, element 4k + i; high: sub-block 2c + 1)
//   q5_K (2880 B): the q4_K layout (2368 B: nibbles in the same places) followed by
//                  for k < 8: [row][4 bytes] = qh[4k + i] (bit j = fifth bit of sub-block j,
//                  element 4k + i); one 64-byte vector per k serves all 8 sub-blocks
//   q6_K (3360 B): d[16] f16 | sc[16][16] i8 | for sub-block j < 16 (elements 16j + 4g + i):
//                  A [row][4]: low nibble q(g=0), high nibble q(g=1) (low 4 bits)
//                  B [row][4]: low nibble q(g=2), high nibble q(g=3)
//                  H [row][4]: bits 2g..2g+1 = high 2 bits of q(g)
// Rows past n_out in the last panel are zero (their outputs are never stored).
//
// Ownership: PackedMatrix owns its buffer (a LargeBuffer: 2 MiB-aligned, huge pages
// advised), or takes a slice of a PackArena (one buffer for every matrix packed at load, so
// no matrix's tail is left on 4 KiB pages) and keeps the arena alive through a shared_ptr.
// PackCache (held by WeightMatrix copies through a shared_ptr) packs a weight view on first
// use, once, under a mutex, and keeps the result as long as any copy of the view lives; a
// view whose data pointer or shape differ from what was packed (e.g. an expert slice of a
// 3-D tensor) gets its own entry. Thread-safety: PackCache::get may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/large_buffer.h"
#include "kernels/qmatmul.h"

namespace keel {
class ThreadPool;
}
namespace keel::kernels {
struct WeightMatrix;
}

namespace keel::kernels::q {

// One buffer sliced among many packed matrices (Model::prepare_weights sizes it with
// PackedMatrix::bytes_for). Thread-safety: take() may be called concurrently.
class PackArena {
 public:
  // Throws keel::Error (kOutOfMemory) when `bytes` cannot be had.
  explicit PackArena(size_t bytes);
  // `bytes` of the arena (64-byte aligned), or nullptr when it has no room left.
  uint8_t* take(size_t bytes);
  size_t capacity() const { return buffer_.size(); }

 private:
  LargeBuffer buffer_;
  std::mutex mutex_;
  size_t used_ = 0;
};

class PackedMatrix {
 public:
  // Repacks `w` (a type with format_for(type) != nullptr), spreading panels over `pool`
  // when given, into a slice of `arena` when given and it has room (else a buffer of its
  // own). Throws keel::Error.
  explicit PackedMatrix(const WeightMatrix& w, ThreadPool* pool = nullptr,
                        std::shared_ptr<PackArena> arena = nullptr);
  // The bytes the packed form of `w` takes (0 when `w` has no integer layout).
  static size_t bytes_for(const WeightMatrix& w);

  const Format& format() const { return *format_; }
  int64_t n_in() const { return n_in_; }
  int64_t n_out() const { return n_out_; }
  int64_t n_blocks() const { return n_blocks_; }
  int64_t n_panels() const { return n_panels_; }
  size_t bytes() const { return bytes_; }
  size_t panel_bytes() const { return panel_bytes_; }
  const uint8_t* panel(int64_t p) const { return base_ + static_cast<size_t>(p) * panel_bytes_; }

 private:
  const Format* format_;
  int64_t n_in_, n_out_, n_blocks_, n_panels_;
  size_t panel_bytes_, bytes_;
  LargeBuffer own_;                    // the buffer when not in an arena
  std::shared_ptr<PackArena> arena_;   // the arena holding the panels, if any
  uint8_t* base_ = nullptr;            // [n_panels][panel_bytes]
};

// Packs one block of 16 rows: rows[i] points at row i's block b (nullptr: a zero row).
void pack_block(tensor::DType type, const uint8_t* const rows[kPanelRows], uint8_t* dst);

class PackCache {
 public:
  // The packed form of `w` (packing it now, on `pool` if given, if this is the first
  // request; `pool` must be driven by the calling thread).
  // `arena` (optional): where to place it (PackedMatrix's constructor).
  const PackedMatrix& get(const WeightMatrix& w, ThreadPool* pool = nullptr,
                          const std::shared_ptr<PackArena>& arena = nullptr);
  // Total bytes held (for memory accounting in `keel bench`).
  size_t bytes() const;

 private:
  struct Entry {
    const uint8_t* data;
    int64_t n_in, n_out;
    size_t row_stride;
    std::unique_ptr<PackedMatrix> packed;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace keel::kernels::q
