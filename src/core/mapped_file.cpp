#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

namespace keel {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kIo, path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(ErrorCode::kIo, path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::kIo, path + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(ErrorCode::kIo, path + ": cannot mmap: " + std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  fd_ = fd;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_), fd_(other.fd_) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.fd_ = -1;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    fd_ = other.fd_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

size_t MappedFile::release_pages(const uint8_t* begin, size_t n) const {
  if (!data_ || begin < data_ || n > size_ || static_cast<size_t>(begin - data_) > size_ - n) return 0;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(begin) + n) & ~(page - 1);
  if (hi <= lo) return 0;
  if (::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) != 0) return 0;
  return hi - lo;
}

void MappedFile::read_range(const uint8_t* begin, size_t n, uint8_t* dst) const {
  if (n == 0) return;
  if (!data_ || begin < data_ || n > size_ || static_cast<size_t>(begin - data_) > size_ - n) {
    throw Error(ErrorCode::kInvalidArgument, path_ + ": read of " + std::to_string(n) + " bytes outside the mapping");
  }
  const size_t offset = static_cast<size_t>(begin - data_);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw Error(ErrorCode::kIo, path_ + ": cannot read " + std::to_string(n) + " bytes at offset " +
                                      std::to_string(offset) + ": " +
                                      (r < 0 ? std::strerror(errno) : "the file ended early"));
    }
    done += static_cast<size_t>(r);
  }
}

void MappedFile::reset() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

}  // namespace keel
