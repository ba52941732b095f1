// MappedFile — a read-only memory map of a whole file. Opening a multi-GB file maps it;
// it does not read it. Movable, not copyable; the mapping and the open descriptor (so
// read_range reads this file even if its path is replaced) live as long as the object.
// Thread-safe for concurrent reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace keel {

class MappedFile {
 public:
  // Throws keel::Error(kIo) naming the path and the OS reason.
  explicit MappedFile(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Gives back the resident pages wholly inside [begin, begin + n) (its page-aligned
  // interior) with madvise(MADV_DONTNEED). The mapping is read-only and private, so a later
  // read re-faults the same bytes from the file: contents never change, only residency.
  // Returns the bytes released (0 when the range is not inside the mapping or the OS
  // refuses). Thread-safe.
  size_t release_pages(const uint8_t* begin, size_t n) const;

  // Copies the n bytes of the mapping at [begin, begin + n) into dst[n] by reading the
  // file (pread), so no page of the mapping is faulted in: for copies made at load, this
  // is about twice as fast as faulting the mapping 4 KiB at a time and leaves it untouched.
  // Throws keel::Error: kInvalidArgument when the range is not inside the mapping, kIo
  // (naming the path and the OS reason) when the read fails or ends early. Thread-safe.
  void read_range(const uint8_t* begin, size_t n, uint8_t* dst) const;

 private:
  void reset();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace keel
