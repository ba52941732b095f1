// The integer matmul's format table, ISA choice and scalar twin (the oracle every SIMD
// kernel is tested against bitwise; also the path on machines without AVX2).
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/cpu.h"
#include "core/error.h"
#include "kernels/qmatmul.h"
#include "tensor/blocks.h"

namespace keel::kernels::q {
namespace {

using tensor::BlockQ4_0;
using tensor::BlockQ4_K;
using tensor::BlockQ5_K;
using tensor::BlockQ6_K;
using tensor::BlockQ8_0;
using tensor::DType;

constexpr Format kFormats[] = {
    {DType::kQ8_0, ActFormat::kQ8x32, 32, sizeof(BlockQ8_0), 544},
    {DType::kQ4_0, ActFormat::kQ8x32, 32, sizeof(BlockQ4_0), 288},
    {DType::kQ4_K, ActFormat::kQ8x256, 256, sizeof(BlockQ4_K), 2368},
    {DType::kQ5_K, ActFormat::kQ8x256, 256, sizeof(BlockQ5_K), 2880},
    {DType::kQ6_K, ActFormat::kQ8x256, 256, sizeof(BlockQ6_K), 3360},
};

float f16(uint16_t h) { return tensor::fp16_to_fp32(h); }

float dot_q8_0(const uint8_t* w, const ActRows& a, int64_t r) {
  const int8_t* x = a.row_qs(r);
  const float* dx = a.row_d(r);
  float acc = 0.0f;
  for (int64_t b = 0; b < a.n_in / 32; ++b) {
    const auto blk = load_block<BlockQ8_0>(w + b * sizeof(BlockQ8_0));
    int32_t isum = 0;
    for (int i = 0; i < 32; ++i) isum += blk.qs[i] * x[32 * b + i];
    acc = std::fma(f16(blk.d) * dx[b], static_cast<float>(isum), acc);
  }
  return acc;
}

float dot_q4_0(const uint8_t* w, const ActRows& a, int64_t r) {
  const int8_t* x = a.row_qs(r);
  const float* dx = a.row_d(r);
  float acc = 0.0f;
  for (int64_t b = 0; b < a.n_in / 32; ++b) {
    const auto blk = load_block<BlockQ4_0>(w + b * sizeof(BlockQ4_0));
    int32_t isum = 0;
    for (int i = 0; i < 16; ++i) {
      isum += ((blk.qs[i] & 15) - 8) * x[32 * b + i] + ((blk.qs[i] >> 4) - 8) * x[32 * b + 16 + i];
    }
    acc = std::fma(f16(blk.d) * dx[b], static_cast<float>(isum), acc);
  }
  return acc;
}

// q4_K and q5_K (kFive: the fifth bit of sub-block j, element l is bit j of qh[l]).
template <typename Block, bool kFive>
float dot_k4_family(const uint8_t* w, const ActRows& a, int64_t r) {
  const int8_t* x = a.row_qs(r);
  const float* dx = a.row_d(r);
  const int16_t* s32 = a.row_sum32(r);
  float acc = 0.0f;
  for (int64_t b = 0; b < a.n_in / 256; ++b) {
    const auto blk = load_block<Block>(w + b * sizeof(Block));
    const int8_t* xb = x + 256 * b;
    int32_t A = 0, B = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      tensor::unpack_scale_min_k4(j, blk.scales, &sc, &m);
      const int c = j / 2, shift = 4 * (j % 2);
      int32_t isum = 0;
      for (int l = 0; l < 32; ++l) {
        int q = (blk.qs[32 * c + l] >> shift) & 15;
        if constexpr (kFive) q |= ((blk.qh[l] >> j) & 1) << 4;
        isum += q * xb[32 * j + l];
      }
      A += sc * isum;
      B += m * s32[8 * b + j];
    }
    const float t = f16(blk.d) * dx[b], u = f16(blk.dmin) * dx[b];
    acc = std::fma(t, static_cast<float>(A), acc);
    acc = std::fma(-u, static_cast<float>(B), acc);
  }
  return acc;
}

float dot_q6_k(const uint8_t* w, const ActRows& a, int64_t r) {
  const int8_t* x = a.row_qs(r);
  const float* dx = a.row_d(r);
  const int16_t* s16 = a.row_sum16(r);
  float acc = 0.0f;
  for (int64_t b = 0; b < a.n_in / 256; ++b) {
    const auto blk = load_block<BlockQ6_K>(w + b * sizeof(BlockQ6_K));
    const int8_t* xb = x + 256 * b;
    int32_t isum16[16] = {};
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t ql0 = blk.ql[64 * h + l], ql1 = blk.ql[64 * h + l + 32], qh = blk.qh[32 * h + l];
        const int q[4] = {(ql0 & 15) | (qh & 3) << 4, (ql1 & 15) | ((qh >> 2) & 3) << 4,
                          (ql0 >> 4) | ((qh >> 4) & 3) << 4, (ql1 >> 4) | ((qh >> 6) & 3) << 4};
        for (int g = 0; g < 4; ++g) {
          const int e = 128 * h + 32 * g + l;
          isum16[e / 16] += q[g] * xb[e];
        }
      }
    }
    int32_t A = 0;
    for (int j = 0; j < 16; ++j) A += blk.scales[j] * (isum16[j] - 32 * s16[16 * b + j]);
    acc = std::fma(f16(blk.d) * dx[b], static_cast<float>(A), acc);
  }
  return acc;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512vnni";
  }
  return "?";
}

Isa best_isa() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni && f.fma && f.f16c) return Isa::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return Isa::kAvx2;
  return Isa::kScalar;
}

const Format* format_for(tensor::DType type) {
  for (const Format& f : kFormats) {
    if (f.type == type) return &f;
  }
  return nullptr;
}

float twin_dot(tensor::DType type, const uint8_t* w_row, const ActRows& a, int64_t r) {
  switch (type) {
    case DType::kQ8_0: return dot_q8_0(w_row, a, r);
    case DType::kQ4_0: return dot_q4_0(w_row, a, r);
    case DType::kQ4_K: return dot_k4_family<BlockQ4_K, false>(w_row, a, r);
    case DType::kQ5_K: return dot_k4_family<BlockQ5_K, true>(w_row, a, r);
    case DType::kQ6_K: return dot_q6_k(w_row, a, r);
    default:
      throw Error(ErrorCode::kUnsupported,
                  std::string("integer matmul: no path for ") + tensor::dtype_name(type));
  }
}

PanelFn panel_pair_kernel(Isa isa, tensor::DType type) {
  return isa == Isa::kAvx512 ? panel_pair_kernel_avx512(type) : nullptr;
}

int64_t panel_pair_min_rows(Isa isa, tensor::DType type) {
  return isa == Isa::kAvx512 ? panel_pair_min_rows_avx512(type) : std::numeric_limits<int64_t>::max();
}

PanelFn panel_kernel(Isa isa, tensor::DType type) {
  switch (isa) {
    case Isa::kAvx512: return panel_kernel_avx512(type);
    case Isa::kAvx2: return panel_kernel_avx2(type);
    case Isa::kScalar: return nullptr;
  }
  return nullptr;
}

}  // namespace keel::kernels::q
