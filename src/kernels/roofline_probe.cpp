#include "kernels/roofline_probe.h"

#include <immintrin.h>

#include "core/cpu.h"

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,fma")

namespace keel::kernels::probe {
namespace {

constexpr int kChains = 12;  // enough independent accumulators to cover the latency

uint64_t read_avx512(const uint8_t* data, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 256) {
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(data + i));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(data + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(data + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(data + i + 192));
  }
  const __m512i x = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(x));
}

__attribute__((noinline)) uint64_t int8_avx512(int64_t iters) {
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  __m512i s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_epi32(s, acc[c]);
  volatile int sink = _mm512_reduce_add_epi32(s);
  (void)sink;
  return static_cast<uint64_t>(iters) * kChains * 64;
}

__attribute__((noinline)) uint64_t bf16_avx512(int64_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3c00);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return static_cast<uint64_t>(iters) * kChains * 32;
}

__attribute__((noinline)) uint64_t f32_avx512(int64_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return static_cast<uint64_t>(iters) * kChains * 16;
}

bool has_avx512() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl;
}

}  // namespace

uint64_t read_bytes(const uint8_t* data, size_t n) {
  if (has_avx512()) return read_avx512(data, n);
  uint64_t x = 0;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v;
    __builtin_memcpy(&v, data + i, 8);
    x ^= v;
  }
  return x;
}

uint64_t int8_dot_macs(int64_t iters) {
  return has_avx512() && cpu_features().avx512_vnni ? int8_avx512(iters) : 0;
}

uint64_t bf16_dot_macs(int64_t iters) {
  return has_avx512() && cpu_features().avx512_bf16 ? bf16_avx512(iters) : 0;
}

uint64_t f32_fma_macs(int64_t iters) { return has_avx512() && cpu_features().fma ? f32_avx512(iters) : 0; }

}  // namespace keel::kernels::probe

#pragma GCC diagnostic pop
#pragma GCC pop_options
