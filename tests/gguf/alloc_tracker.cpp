#include "alloc_tracker.h"

#include <cstdlib>
#include <new>

namespace keel::test {
namespace {
thread_local bool g_active = false;
thread_local AllocStats g_stats;
}  // namespace

AllocTracker::AllocTracker() {
  g_stats = {};
  g_active = true;
}
AllocTracker::~AllocTracker() { g_active = false; }
AllocStats AllocTracker::stats() const { return g_stats; }

}  // namespace keel::test

void* operator new(size_t n) {
  using namespace keel::test;
  if (g_active) {
    g_stats.total_bytes += n;
    if (n > g_stats.largest_bytes) g_stats.largest_bytes = n;
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
