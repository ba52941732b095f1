#include "core/cpu.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace keel {
namespace {

#if defined(__x86_64__)
unsigned long long read_xcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  if (!osxsave) return f;
  const unsigned long long xcr0 = read_xcr0();
  const bool ymm_os = (xcr0 & 0x6) == 0x6;
  const bool zmm_os = (xcr0 & 0xe6) == 0xe6;
  const bool amx_os = (xcr0 & (3ull << 17)) == (3ull << 17);
  f.fma = ymm_os && (c & (1u << 12));
  f.f16c = ymm_os && (c & (1u << 29));
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = ymm_os && (b & (1u << 5));
    f.avx512f = zmm_os && (b & (1u << 16));
    f.avx512bw = zmm_os && (b & (1u << 30));
    f.avx512vl = zmm_os && (b & (1u << 31));
    f.avx512_vnni = zmm_os && (c & (1u << 11));
    f.avx512_fp16 = zmm_os && (d & (1u << 23));
    f.amx_bf16 = amx_os && (d & (1u << 22));
    f.amx_tile = amx_os && (d & (1u << 24));
    f.amx_int8 = amx_os && (d & (1u << 25));
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx512_bf16 = zmm_os && (a & (1u << 5));
  }
#endif
  const char* cap = std::getenv("KEEL_CPU");
  if (cap && !std::strcmp(cap, "scalar")) {
    f = CpuFeatures{};
  } else if (cap && !std::strcmp(cap, "avx2")) {
    CpuFeatures g;
    g.avx2 = f.avx2;
    g.fma = f.fma;
    g.f16c = f.f16c;
    f = g;
  }
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(avx512_fp16, "avx512_fp16");
  add(amx_tile, "amx_tile");
  add(amx_int8, "amx_int8");
  add(amx_bf16, "amx_bf16");
  return s.empty() ? "scalar" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace keel
