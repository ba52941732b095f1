// MXFP4: 32 fp4 (E2M1) values sharing one E8M0 power-of-two scale.
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "tensor/blocks.h"
#include "tensor/quant_internal.h"

namespace keel::tensor::detail {
namespace {

// The scale of the doubled value table: 2^(e - 128) (half of E8M0's 2^(e - 127)).
float mxfp4_scale(uint8_t e) { return std::ldexp(1.0f, static_cast<int>(e) - 128); }

// Index of the table value nearest to t (first on ties, so +0 wins over -0).
int nearest_fp4(float t) {
  int best = 0;
  float best_err = std::fabs(t);
  for (int k = 1; k < 16; ++k) {
    const float err = std::fabs(t - static_cast<float>(kMxfp4Values[k]));
    if (err < best_err) {
      best_err = err;
      best = k;
    }
  }
  return best;
}

double block_error(const float* x, uint8_t e, int* codes) {
  const float d = mxfp4_scale(e);
  double err = 0.0;
  for (int j = 0; j < kQK; ++j) {
    codes[j] = nearest_fp4(x[j] / d);
    const double diff = static_cast<double>(kMxfp4Values[codes[j]]) * d - x[j];
    err += diff * diff;
  }
  return err;
}

}  // namespace

void dequantize_mxfp4(const void* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockMXFP4>(src, i);
    const float d = mxfp4_scale(b.e);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[i * kQK + j] = static_cast<float>(kMxfp4Values[b.qs[j] & 0x0f]) * d;
      dst[i * kQK + j + kQK / 2] = static_cast<float>(kMxfp4Values[b.qs[j] >> 4]) * d;
    }
  }
}

void quantize_mxfp4(const float* src, void* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    BlockMXFP4 b{};
    int codes[kQK] = {};
    if (amax > 0.0f && std::isfinite(amax)) {
      // amax = m * 2^k with m in [0.5, 1). Scale 2^(k-3) puts amax at [4, 8) table units
      // (never clipped); 2^(k-4) at [8, 16) (finer steps, values above 12 clip). Keep the
      // better of the two.
      int k;
      std::frexp(amax, &k);
      int best_e = -1;
      double best_err = 0.0;
      for (int exponent : {k - 3 + 128, k - 4 + 128}) {
        if (exponent < 0 || exponent > 254) continue;
        int trial[kQK];
        const double err = block_error(x, static_cast<uint8_t>(exponent), trial);
        if (best_e < 0 || err < best_err) {
          best_err = err;
          best_e = exponent;
          for (int j = 0; j < kQK; ++j) codes[j] = trial[j];
        }
      }
      if (best_e < 0) {  // tinier than E8M0 can scale to: use the smallest scale
        best_e = 0;
        block_error(x, 0, codes);
      }
      b.e = static_cast<uint8_t>(best_e);
    }
    for (int j = 0; j < kQK / 2; ++j) b.qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + kQK / 2] << 4));
    store_block(dst, i, b);
  }
}

}  // namespace keel::tensor::detail
