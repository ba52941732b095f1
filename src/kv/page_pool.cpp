#include "kv/page_pool.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>

#include "core/error.h"
#include "core/large_buffer.h"

namespace keel::kv {

PagePool::PagePool(int64_t n_pages, size_t slice_bytes, int32_t n_slices)
    : slice_bytes_(slice_bytes), n_slices_(n_slices) {
  if (n_pages < 0 || slice_bytes == 0 || n_slices <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "kv page pool: invalid size " +
                                                 std::to_string(n_pages) + " pages of " +
                                                 std::to_string(n_slices) + " slices of " +
                                                 std::to_string(slice_bytes) + " bytes");
  }
  const size_t n = static_cast<size_t>(n_pages) * static_cast<size_t>(n_slices);
  if (static_cast<size_t>(n_pages) > SIZE_MAX / static_cast<size_t>(n_slices) ||
      (n != 0 && slice_bytes > SIZE_MAX / n)) {
    throw Error(ErrorCode::kOutOfMemory, "kv page pool: " + std::to_string(n_pages) +
                                             " pages of " + std::to_string(n_slices) + " x " +
                                             std::to_string(slice_bytes) +
                                             " bytes overflow the address space");
  }
  // Untouched pages cost no resident memory; allocate() zeroes. Huge pages matter here: a
  // decode step at depth reads every layer's K/V pages (core/large_buffer.h).
  storage_ = LargeBuffer(n * slice_bytes, "kv page pool", LargeBuffer::Commit::kOnFirstWrite);
  refs_.assign(static_cast<size_t>(n_pages), 0);
  free_.reserve(static_cast<size_t>(n_pages));
  // Ascending ids are already a min-heap (each parent no greater than its children).
  for (int64_t i = 0; i < n_pages; ++i) free_.push_back(static_cast<PageId>(i));
}

void PagePool::check_id(PageId page, const char* what) const {
  if (page < 0 || page >= capacity()) {
    throw Error(ErrorCode::kInternal, std::string("kv page pool: ") + what +
                                          " of invalid page " + std::to_string(page));
  }
}

PageId PagePool::allocate() {
  if (free_.empty()) {
    throw Error(ErrorCode::kOutOfMemory, "kv page pool: all " + std::to_string(capacity()) +
                                             " pages in use");
  }
  std::pop_heap(free_.begin(), free_.end(), std::greater<PageId>());
  const PageId page = free_.back();
  free_.pop_back();
  refs_[page] = 1;
  for (int32_t s = 0; s < n_slices_; ++s) std::memset(slice(page, s), 0, slice_bytes_);
  return page;
}

void PagePool::retain(PageId page) {
  check_id(page, "retain");
  if (refs_[page] == 0) {
    throw Error(ErrorCode::kInternal, "kv page pool: retain of free page " +
                                          std::to_string(page));
  }
  ++refs_[page];
}

void PagePool::release(PageId page) {
  check_id(page, "release");
  if (refs_[page] == 0) {
    throw Error(ErrorCode::kInternal, "kv page pool: release of free page " +
                                          std::to_string(page));
  }
  if (--refs_[page] == 0) {
    free_.push_back(page);
    std::push_heap(free_.begin(), free_.end(), std::greater<PageId>());
  }
}

int32_t PagePool::refcount(PageId page) const {
  check_id(page, "refcount");
  return refs_[page];
}

uint8_t* PagePool::slice(PageId page, int32_t s) {
  const size_t index = static_cast<size_t>(s) * refs_.size() + static_cast<size_t>(page);
  return storage_.data() + index * slice_bytes_;
}

const uint8_t* PagePool::slice(PageId page, int32_t s) const {
  return const_cast<PagePool*>(this)->slice(page, s);
}

void PagePool::copy_page(PageId to, PageId from) {
  check_id(to, "copy to");
  check_id(from, "copy from");
  for (int32_t s = 0; s < n_slices_; ++s) std::memcpy(slice(to, s), slice(from, s), slice_bytes_);
}

}  // namespace keel::kv
