// CPU feature detection (cpuid + OS support for the register state). Detected once;
// kernels use it to pick their implementation at start-up.
#pragma once

#include <string>

namespace keel {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;

  std::string describe() const;  // e.g. "avx2 fma f16c avx512f ..."
};

// Features of this machine. KEEL_CPU=scalar|avx2 caps what kernels may use (for tests of
// the reference path and for comparing paths).
const CpuFeatures& cpu_features();

}  // namespace keel
