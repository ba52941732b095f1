#include "core/large_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "core/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define KEEL_LARGE_BUFFER_ON_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEL_LARGE_BUFFER_ON_HEAP 1
#endif
#endif

namespace keel {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

LargeBuffer::LargeBuffer(size_t bytes, const char* what, Commit commit) : bytes_(bytes) {
  if (bytes == 0) return;
  const std::string name = what ? what : "buffer";
  if (bytes > SIZE_MAX - 2 * kHugePage) {
    throw Error(ErrorCode::kOutOfMemory, name + ": " + std::to_string(bytes) + " bytes overflow the address space");
  }
#if defined(KEEL_LARGE_BUFFER_ON_HEAP)
  (void)commit;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
  if (data_) std::memset(data_, 0, bytes);
#else
  // Mapped one huge page longer than asked so the storage can start on a 2 MiB boundary;
  // the pages before it are never touched, so they cost address space only.
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  const size_t mapped = rounded + kHugePage;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (commit == Commit::kOnFirstWrite ? MAP_NORESERVE : 0);
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p != MAP_FAILED) {
    const uintptr_t start = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
    data_ = reinterpret_cast<uint8_t*>(start);
    mapping_ = p;
    mapping_bytes_ = mapped;
#ifdef MADV_HUGEPAGE
    // Only whole 2 MiB pages inside the buffer: a huge page over the tail would make up to
    // 2 MiB resident that nobody uses (small buffers, e.g. a matrix packed after load).
    const size_t whole = bytes / kHugePage * kHugePage;
    if (whole != 0) (void)::madvise(data_, whole, MADV_HUGEPAGE);
#endif
  }
#endif
  if (!data_) {
    bytes_ = 0;
    throw Error(ErrorCode::kOutOfMemory, name + ": cannot allocate " + std::to_string(bytes) + " bytes");
  }
}

LargeBuffer::~LargeBuffer() { release(); }

LargeBuffer::LargeBuffer(LargeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)) {}

LargeBuffer& LargeBuffer::operator=(LargeBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
  }
  return *this;
}

void LargeBuffer::release() {
  if (mapping_) {
    ::munmap(mapping_, mapping_bytes_);
  } else {
    std::free(data_);  // the sanitizer build's heap array (or nullptr)
  }
  data_ = nullptr;
  bytes_ = 0;
  mapping_ = nullptr;
  mapping_bytes_ = 0;
}

std::string transparent_huge_pages_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line)) return "";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close <= open) return "";
  return line.substr(open + 1, close - open - 1);
}

int64_t anon_huge_page_bytes() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string key;
  while (f >> key) {
    if (key == "AnonHugePages:") {
      int64_t kib = -1;
      return f >> kib ? kib * 1024 : -1;
    }
    f.ignore(1 << 12, '\n');
  }
  return -1;
}

}  // namespace keel
