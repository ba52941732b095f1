// MappedFile — a read-only memory map of a whole file. Opening a multi-GB file maps it;
// it does not read it. Movable, not copyable; the mapping lives as long as the object.
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

 private:
  void reset();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace keel
