// Replaces the global operator new/delete of a test binary with counting versions, so a test
// can prove a code path allocates nothing: compare allocation_count() before and after.
// Include from exactly ONE source file of a test binary (the replacements are definitions).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace keel::test {
inline std::atomic<int64_t> g_allocation_count{0};
// Allocations by every thread of the process since it started.
inline int64_t allocation_count() { return g_allocation_count.load(std::memory_order_relaxed); }
}  // namespace keel::test

// The replacements pair malloc with free on purpose.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  keel::test::g_allocation_count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  keel::test::g_allocation_count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too: left to the runtime they would allocate with its operator new[]
// and free through the delete[] below (a mismatch AddressSanitizer reports).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  keel::test::g_allocation_count.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  keel::test::g_allocation_count.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
