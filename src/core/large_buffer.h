// LargeBuffer — a big, long-lived, writable byte buffer (packed weights, KV page pools)
// placed so the kernel may back it with 2 MiB pages.
//
// Why: a decode step streams every byte of these buffers once. With 4 KiB pages each
// 4 KiB costs a TLB entry, and in a virtual machine a TLB miss is a two-level walk; on
// the development VM q8_0 generation ran at 8 tokens/s from 4 KiB pages and at 47 from
// huge ones (docs/PERFORMANCE.md).
//
// Contract: the storage is an anonymous private mapping starting at a 2 MiB boundary,
// advised MADV_HUGEPAGE (a hint: without transparent huge pages it is ordinary memory).
// Pages are backed on first write and read as zero before that. Commit::kNow (buffers
// filled at once, e.g. packed weights) lets the kernel's overcommit check refuse a size
// the machine cannot hold, as an error here rather than an OOM kill while filling;
// Commit::kOnFirstWrite (MAP_NORESERVE: a KV pool's capacity, mostly never touched)
// reserves address space only. Under AddressSanitizer the buffer is a heap array instead,
// so an access past its end is still reported. Memory is released on destruction.
// Movable, not copyable; not thread-safe to move while in use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace keel {

class LargeBuffer {
 public:
  enum class Commit { kNow, kOnFirstWrite };

  LargeBuffer() = default;
  // Reserves `bytes` bytes (0 is allowed: an empty buffer). Throws keel::Error
  // (kOutOfMemory) naming `what` when the memory cannot be had.
  LargeBuffer(size_t bytes, const char* what, Commit commit = Commit::kNow);
  ~LargeBuffer();
  LargeBuffer(LargeBuffer&& other) noexcept;
  LargeBuffer& operator=(LargeBuffer&& other) noexcept;
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  void release();

  uint8_t* data_ = nullptr;   // [bytes_]
  size_t bytes_ = 0;
  void* mapping_ = nullptr;   // the whole mapping (nullptr: heap array or empty)
  size_t mapping_bytes_ = 0;
};

// The kernel's transparent-huge-page policy ("always", "madvise" or "never", the bracketed
// word of /sys/kernel/mm/transparent_hugepage/enabled), or "" when it cannot be read. Under
// "never" a LargeBuffer is ordinary 4 KiB-page memory (see the class comment).
std::string transparent_huge_pages_mode();

// This process's anonymous memory on huge pages (AnonHugePages of /proc/self/smaps_rollup),
// in bytes, or -1 when it cannot be read. For load logs: how much of the packed weights and
// KV pool the kernel actually placed on huge pages.
int64_t anon_huge_page_bytes();

}  // namespace keel
