#include "kernels/roofline_probe.h"

#include <immintrin.h>

#include "core/cpu.h"

namespace keel::kernels::probe {
namespace {
constexpr int kChains = 12;  // enough independent accumulators to cover the latency
}  // namespace
}  // namespace keel::kernels::probe

// Twelve named accumulators (an array would live in memory and time the loads instead);
// the empty asm keeps the compiler from folding the loop.
#define KEEL_PROBE_LOOP(T, INIT, STEP, LANES_PER_OP)                                      \
  T a0 = INIT(0), a1 = INIT(1), a2 = INIT(2), a3 = INIT(3), a4 = INIT(4), a5 = INIT(5);   \
  T a6 = INIT(6), a7 = INIT(7), a8 = INIT(8), a9 = INIT(9), a10 = INIT(10), a11 = INIT(11); \
  for (int64_t i = 0; i < iters; ++i) {                                                   \
    a0 = STEP(a0); a1 = STEP(a1); a2 = STEP(a2); a3 = STEP(a3); a4 = STEP(a4); a5 = STEP(a5); \
    a6 = STEP(a6); a7 = STEP(a7); a8 = STEP(a8); a9 = STEP(a9); a10 = STEP(a10); a11 = STEP(a11); \
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));    \
    __asm__ volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));  \
  }                                                                                       \
  T all[kChains] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};                   \
  volatile char sink = reinterpret_cast<const char*>(all)[iters % sizeof(all)];           \
  (void)sink;                                                                             \
  return static_cast<uint64_t>(iters) * kChains * (LANES_PER_OP)

#pragma GCC push_options
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,fma")

namespace keel::kernels::probe {
namespace {

// Eight independent accumulators over 512 bytes per step (then one 256-byte step for the
// tail): the loop never waits on a dependency, so the loads' arrival is all it measures.
uint64_t read_avx512(const uint8_t* data, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  size_t i = 0;
  for (; i + 512 <= n; i += 512) {
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(data + i));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(data + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(data + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(data + i + 192));
    a4 = _mm512_xor_si512(a4, _mm512_load_si512(data + i + 256));
    a5 = _mm512_xor_si512(a5, _mm512_load_si512(data + i + 320));
    a6 = _mm512_xor_si512(a6, _mm512_load_si512(data + i + 384));
    a7 = _mm512_xor_si512(a7, _mm512_load_si512(data + i + 448));
  }
  for (; i < n; i += 256) {
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(data + i));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(data + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(data + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(data + i + 192));
  }
  const __m512i x = _mm512_xor_si512(_mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)),
                                     _mm512_xor_si512(_mm512_xor_si512(a4, a5), _mm512_xor_si512(a6, a7)));
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(x));
}

__attribute__((noinline)) uint64_t int8_avx512(int64_t iters) {
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
#define INIT(c) _mm512_set1_epi32(c)
#define STEP(x) _mm512_dpbusd_epi32(x, a, b)
  KEEL_PROBE_LOOP(__m512i, INIT, STEP, 64);
#undef INIT
#undef STEP
}

__attribute__((noinline)) uint64_t bf16_avx512(int64_t iters) {
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3c00);
#define INIT(c) _mm512_set1_ps(float(c))
#define STEP(x) _mm512_dpbf16_ps(x, a, b)
  KEEL_PROBE_LOOP(__m512, INIT, STEP, 32);
#undef INIT
#undef STEP
}

__attribute__((noinline)) uint64_t f32_avx512(int64_t iters) {
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
#define INIT(c) _mm512_set1_ps(float(c))
#define STEP(x) _mm512_fmadd_ps(x, a, b)
  KEEL_PROBE_LOOP(__m512, INIT, STEP, 16);
#undef INIT
#undef STEP
}

}  // namespace
}  // namespace keel::kernels::probe

#pragma GCC diagnostic pop
#pragma GCC pop_options

// AVX2 twins, for machines without AVX-512: the rates the AVX2 kernels can reach.
#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace keel::kernels::probe {
namespace {

// u8 x s8 pairs to i16 (vpmaddubsw), pairs of those to i32 (vpmaddwd), accumulated: the
// three instructions qmatmul_avx2.cpp spends on 32 multiply-adds. The accumulator is also
// the u8 operand, or the compiler would hoist the products out of the loop.
__attribute__((noinline)) uint64_t int8_avx2(int64_t iters) {
  const __m256i b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
#define INIT(c) _mm256_set1_epi32(c)
#define STEP(x) _mm256_add_epi32(x, _mm256_madd_epi16(_mm256_maddubs_epi16(x, b), ones))
  KEEL_PROBE_LOOP(__m256i, INIT, STEP, 32);
#undef INIT
#undef STEP
}

__attribute__((noinline)) uint64_t f32_avx2(int64_t iters) {
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
#define INIT(c) _mm256_set1_ps(float(c))
#define STEP(x) _mm256_fmadd_ps(x, a, b)
  KEEL_PROBE_LOOP(__m256, INIT, STEP, 8);
#undef INIT
#undef STEP
}

}  // namespace
}  // namespace keel::kernels::probe

#pragma GCC pop_options

#undef KEEL_PROBE_LOOP

namespace keel::kernels::probe {
namespace {

bool has_avx512() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl;
}

bool has_avx2_fma() { return cpu_features().avx2 && cpu_features().fma; }

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
  if (has_avx512() && cpu_features().avx512_vnni) return int8_avx512(iters);
  return has_avx2_fma() ? int8_avx2(iters) : 0;
}

uint64_t bf16_dot_macs(int64_t iters) {
  return has_avx512() && cpu_features().avx512_bf16 ? bf16_avx512(iters) : 0;
}

uint64_t f32_fma_macs(int64_t iters) {
  if (has_avx512() && cpu_features().fma) return f32_avx512(iters);
  return has_avx2_fma() ? f32_avx2(iters) : 0;
}

}  // namespace keel::kernels::probe
