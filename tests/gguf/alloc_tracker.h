// Test helper: counts heap allocations made by this thread while a scope is active (the
// test binary replaces global operator new), so tests can prove the reader never
// allocates more than a small multiple of the file's size.
#pragma once

#include <cstddef>

namespace keel::test {

struct AllocStats {
  size_t total_bytes = 0;    // sum of every allocation's size
  size_t largest_bytes = 0;  // the largest single allocation
};

class AllocTracker {
 public:
  AllocTracker();
  ~AllocTracker();
  AllocTracker(const AllocTracker&) = delete;
  AllocTracker& operator=(const AllocTracker&) = delete;
  AllocStats stats() const;
};

}  // namespace keel::test
