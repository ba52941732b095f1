// KEEL_TEST_ASAN is defined when this test is built with AddressSanitizer (gcc or clang):
// tests of address-space limits or raw mappings skip there, since the sanitizer reserves
// address space of its own and core/large_buffer.h uses a heap array instead.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define KEEL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEL_TEST_ASAN 1
#endif
#endif
