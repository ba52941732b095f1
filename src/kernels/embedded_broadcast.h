// Multiply-adds whose scalar operand is broadcast from memory inside the instruction (EVEX
// embedded broadcast, {1to16}). Include after an AVX-512 target pragma (the helpers are
// internal to each including file, like everything compiled under that file's target).
//
// Why: GCC emits a separate vbroadcastss / vpbroadcastd for a broadcast that feeds two or
// more multiply-adds (and for every _mm512_set1_epi32 of a loaded int32), and on this class
// of core (Zen 4) a 512-bit broadcast takes a vector pipe slot that the folded form does
// not. Measured on the flash value loop (two fmas per broadcast): 5.7 -> 4.7 cycles per
// key-head. The arithmetic is exactly the intrinsic's.
// The other side (Zen 5, 2026-12-04): each folded broadcast is a load, and a loop whose
// loads outnumber its multiply-adds is bound by them. Where one broadcast feeds the
// multiply-adds of several weight panels, qmatmul_avx512.cpp (XWord) broadcasts once into a
// register instead (pp512 +14-18%); for one multiply-add per broadcast the folded form stays.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace keel::kernels {
namespace {

typedef int32_t unaligned_i32 __attribute__((aligned(1), may_alias));

// _mm512_fmadd_ps(_mm512_set1_ps(*p), v, acc): acc + v · p[0] in every lane, one rounding.
// The empty asm hides p's identity, so each call keeps its own single-use load, which GCC
// folds into the fma (an asm fma here made GCC keep its accumulators on the stack).
inline __m512 fmadd_bcast(__m512 acc, __m512 v, const float* p) {
  __asm__ volatile("" : "+r"(p));
  return _mm512_fmadd_ps(_mm512_set1_ps(*p), v, acc);
}

// _mm512_dpbusd_epi32(acc, u, broadcast of the 4 signed bytes at x): u unsigned bytes.
inline __m512i dpbusd_bcast(__m512i acc, __m512i u, const int8_t* x) {
  __asm__("vpdpbusd %[x]%{1to16%}, %[u], %[acc]"
          : [acc] "+v"(acc)
          : [u] "v"(u), [x] "m"(*reinterpret_cast<const unaligned_i32*>(x)));
  return acc;
}

// _mm512_dpwssd_epi32(acc, a, broadcast of the 2 int16 at x).
inline __m512i dpwssd_bcast(__m512i acc, __m512i a, const int16_t* x) {
  __asm__("vpdpwssd %[x]%{1to16%}, %[a], %[acc]"
          : [acc] "+v"(acc)
          : [a] "v"(a), [x] "m"(*reinterpret_cast<const unaligned_i32*>(x)));
  return acc;
}

}  // namespace
}  // namespace keel::kernels
