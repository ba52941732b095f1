// PagePool — the fixed-size pages of one layer group, with reference counts and a free
// list. A page is owned by whoever holds a reference (sequences' page tables, prefix index
// nodes); it returns to the free list when the last reference is released.
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
  // Reserves n_pages * page_bytes bytes of address space; the OS backs it as pages are
  // first written. Throws kOutOfMemory when the allocation fails.
  PagePool(int64_t n_pages, size_t page_bytes);

  int64_t capacity() const { return static_cast<int64_t>(refs_.size()); }
  int64_t free_count() const { return static_cast<int64_t>(free_.size()); }
  int64_t used_count() const { return capacity() - free_count(); }
  size_t page_bytes() const { return page_bytes_; }

  PageId allocate();
  void retain(PageId page);
  void release(PageId page);
  int32_t refcount(PageId page) const;
  bool is_free(PageId page) const { return refcount(page) == 0; }

  uint8_t* data(PageId page);
  const uint8_t* data(PageId page) const;

 private:
  void check_id(PageId page, const char* what) const;

  size_t page_bytes_;
  LargeBuffer storage_;                 // [capacity][page_bytes], huge-page backed
  std::vector<int32_t> refs_;           // [capacity] reference counts, 0 = free
  std::vector<PageId> free_;            // stack; lowest ids handed out first
};

}  // namespace keel::kv
