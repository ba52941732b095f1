#include "kv/page_pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "core/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define KEEL_POOL_ON_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEL_POOL_ON_HEAP 1
#endif
#endif

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
  // Mapped, not value-initialised: untouched pages cost no resident memory; allocate()
  // zeroes. The reservation is rounded up to whole 2 MiB pages and advised for huge pages:
  // a decode step at depth reads every layer's K/V pages, and with 4 KiB pages each read
  // spans more TLB entries than the core holds.
  // Under AddressSanitizer the pool stays a heap array, so an access past its end is still
  // reported (a mapping has no redzone).
  const size_t bytes = n * page_bytes;
#if defined(KEEL_POOL_ON_HEAP)
  if (bytes != 0) storage_ = std::unique_ptr<uint8_t[], Unmap>(new (std::nothrow) uint8_t[bytes], Unmap{nullptr, 0});
#else
  if (bytes != 0) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    const size_t mapped = rounded + kHuge;  // room to start at a 2 MiB boundary
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      const uintptr_t start = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~uintptr_t{kHuge - 1};
      auto* aligned = reinterpret_cast<uint8_t*>(start);
#ifdef MADV_HUGEPAGE
      (void)::madvise(aligned, rounded, MADV_HUGEPAGE);  // a hint: without it the pool still works
#endif
      storage_ = std::unique_ptr<uint8_t[], Unmap>(aligned, Unmap{p, mapped});
    }
  }
#endif
  if (!storage_ && n != 0) {
    throw Error(ErrorCode::kOutOfMemory, "kv page pool: cannot allocate " +
                                             std::to_string(n * page_bytes) + " bytes (" +
                                             std::to_string(n_pages) + " pages)");
  }
  refs_.assign(n, 0);
  free_.reserve(n);
  for (int64_t i = n_pages - 1; i >= 0; --i) free_.push_back(static_cast<PageId>(i));
}

void PagePool::Unmap::operator()(uint8_t* p) const {
  if (!p) return;
  if (base) {
    ::munmap(base, bytes);
  } else {
    delete[] p;  // the sanitizer build's heap array
  }
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
  return storage_.get() + static_cast<size_t>(page) * page_bytes_;
}

const uint8_t* PagePool::data(PageId page) const {
  return storage_.get() + static_cast<size_t>(page) * page_bytes_;
}

}  // namespace keel::kv
