// PagePool — the fixed-size pages of one layer group, with reference counts and a free
// list. A page is owned by whoever holds a reference (sequences' page tables, prefix index
// nodes); it returns to the free list when the last reference is released.
//
// A page is made of n_slices slices (one per layer of the group), stored slice-major:
// slice s of every page lies in one region, pages in id order ([n_slices][capacity]
// [slice_bytes]). A sequence's pages are mostly consecutive ids (lowest first), so what one
// layer's attention reads at depth is long runs of memory the hardware prefetcher follows,
// not 8.5 KiB pieces 22 layers apart. Decode attention at depth 4096 (TinyLlama shapes, q8_0
// K/V, caches evicted, BM_FlashAttention/8/1/4096/2/3/22/1, alternated 3x): 554 / 710 / 610
// -> 455 / 571 / 467 us per layer; a bare read of the layer's K/V lines, 143 -> 81 us.
// The price: a page's first use touches n_slices regions, so with huge pages the resident
// size grows by up to n_slices x 2 MiB at the first page instead of 2 MiB; the pool's
// planned size (capacity x page_bytes) is unchanged.
//
// Contract: page ids are dense [0, capacity). allocate() hands out a zero-filled page with
// one reference; callers check free_count() first (allocate on an empty pool throws
// kOutOfMemory). retain/release on a free or unknown page throw kInternal: they mean the
// cache's bookkeeping is broken, which is reported, never aborted on. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/large_buffer.h"

namespace keel::kv {

using PageId = int32_t;
inline constexpr PageId kNoPage = -1;

class PagePool {
 public:
  // Reserves n_pages * n_slices * slice_bytes bytes of address space; the OS backs it as
  // pages are first written. Throws kOutOfMemory when the allocation fails.
  PagePool(int64_t n_pages, size_t slice_bytes, int32_t n_slices = 1);

  int64_t capacity() const { return static_cast<int64_t>(refs_.size()); }
  int64_t free_count() const { return static_cast<int64_t>(free_.size()); }
  int64_t used_count() const { return capacity() - free_count(); }
  size_t page_bytes() const { return slice_bytes_ * static_cast<size_t>(n_slices_); }
  size_t slice_bytes() const { return slice_bytes_; }
  int32_t n_slices() const { return n_slices_; }

  PageId allocate();
  void retain(PageId page);
  void release(PageId page);
  int32_t refcount(PageId page) const;
  bool is_free(PageId page) const { return refcount(page) == 0; }

  // Slice s (0 <= s < n_slices) of a page: slice_bytes() bytes. Unchecked: callers hold a
  // reference to the page.
  uint8_t* slice(PageId page, int32_t s);
  const uint8_t* slice(PageId page, int32_t s) const;
  // Copies every slice of page `from` over page `to` (copy-on-write of a shared page).
  void copy_page(PageId to, PageId from);

 private:
  void check_id(PageId page, const char* what) const;

  size_t slice_bytes_;
  int32_t n_slices_;
  LargeBuffer storage_;                 // [n_slices][capacity][slice_bytes], huge-page backed
  std::vector<int32_t> refs_;           // [capacity] reference counts, 0 = free
  // Min-heap of free ids: the lowest is always handed out first, also after releases (a
  // stack gave a released run back in reverse order), so a new sequence's pages ascend.
  std::vector<PageId> free_;
};

}  // namespace keel::kv
