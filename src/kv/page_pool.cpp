#include "kv/page_pool.h"

#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "core/error.h"
#include "core/large_buffer.h"

namespace keel::kv {

PagePool::PagePool(int64_t n_pages, size_t page_bytes) : page_bytes_(page_bytes) {
  if (n_pages < 0 || page_bytes == 0) {
    throw Error(ErrorCode::kInvalidArgument, "kv page pool: invalid size " +
                                                 std::to_string(n_pages) + " pages of " +
                                                 std::to_string(page_bytes) + " bytes");
  }
  const size_t n = static_cast<size_t>(n_pages);
  if (n != 0 && page_bytes > SIZE_MAX / n) {
    throw Error(ErrorCode::kOutOfMemory, "kv page pool: " + std::to_string(n_pages) +
                                             " pages of " + std::to_string(page_bytes) +
                                             " bytes overflow the address space");
  }
  // Untouched pages cost no resident memory; allocate() zeroes. Huge pages matter here: a
  // decode step at depth reads every layer's K/V pages (core/large_buffer.h).
  storage_ = LargeBuffer(n * page_bytes, "kv page pool", LargeBuffer::Commit::kOnFirstWrite);
  refs_.assign(n, 0);
  free_.reserve(n);
  for (int64_t i = n_pages - 1; i >= 0; --i) free_.push_back(static_cast<PageId>(i));
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
  const PageId page = free_.back();
  free_.pop_back();
  refs_[page] = 1;
  std::memset(data(page), 0, page_bytes_);
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
  if (--refs_[page] == 0) free_.push_back(page);
}

int32_t PagePool::refcount(PageId page) const {
  check_id(page, "refcount");
  return refs_[page];
}

uint8_t* PagePool::data(PageId page) {
  return storage_.data() + static_cast<size_t>(page) * page_bytes_;
}

const uint8_t* PagePool::data(PageId page) const {
  return storage_.data() + static_cast<size_t>(page) * page_bytes_;
}

}  // namespace keel::kv
