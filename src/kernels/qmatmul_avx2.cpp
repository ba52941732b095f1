// AVX2 panel kernels of the integer matmul (qmatmul.h defines the arithmetic, repack.h the
// panel layout). A 16-row panel is two halves of 8 lanes (rows 0-7 are bytes 0-31 of every
// 64-byte group, rows 8-15 bytes 32-63). AVX2 has no u8 x s8 -> i32 dot, so maddubs
// (u8 x s8 -> i16 pairs) + madd by ones stands in; every operand range below keeps the i16
// pair sums exact (no saturation), so the integer results equal the twin's.
#include <immintrin.h>

#include <cstring>

#include "kernels/qmatmul.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace keel::kernels::q {
namespace {

constexpr int kTile = 4;

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

inline __m256 load_f16x8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// acc + dot of 4-byte groups: u (0..63) unsigned against x signed; exact.
inline __m256i dot_u6(__m256i acc, __m256i u, __m256i x) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
}

// acc + dot of signed w (stored as w ^ 0x80) against signed x; |w| <= 128 keeps pairs exact.
inline __m256i dot_s8(__m256i acc, __m256i stored, __m256i x) {
  const __m256i w = _mm256_xor_si256(stored, _mm256_set1_epi8(static_cast<char>(0x80)));
  return dot_u6(acc, _mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
}

// Per file on purpose: anything instantiated under this file's target pragma must keep
// internal linkage, or the linker could hand another ISA's path a copy it cannot run.
template <int R>
struct Rows {
  const int8_t* x[R];
  const float* d[R];
  const int16_t* s16[R];
  const int16_t* s32[R];
  Rows(const ActRows& a, int64_t r0) {
    for (int r = 0; r < R; ++r) {
      x[r] = a.row_qs(r0 + r);
      d[r] = a.row_d(r0 + r);
      s16[r] = a.sum16 ? a.row_sum16(r0 + r) : nullptr;
      s32[r] = a.row_sum32(r0 + r);
    }
  }
};

template <int R>
void store_half(const __m256 (&acc)[R], float* y, int64_t r0, int64_t ldy, int half, int n_valid) {
  const int lanes = n_valid - 8 * half;
  if (lanes <= 0) return;
  alignas(32) float tmp[8];
  for (int r = 0; r < R; ++r) {
    float* dst = y + (r0 + r) * ldy + 8 * half;
    if (lanes >= 8) {
      _mm256_storeu_ps(dst, acc[r]);
    } else {
      _mm256_store_ps(tmp, acc[r]);
      std::memcpy(dst, tmp, sizeof(float) * lanes);
    }
  }
}

template <int R, bool kQ4, class Pf>
void legacy_half(const uint8_t* panel, int64_t nb, const Rows<R>& p, int half, __m256 (&acc)[R], const Pf& pf) {
  constexpr size_t kBlockBytes = kQ4 ? 288 : 544;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    pf.at_block(b);
    const uint8_t* blk = panel + b * kBlockBytes;
    const __m256 dw = load_f16x8(blk + 16 * half);
    __m256i isum[R];
    if constexpr (kQ4) {
      for (int r = 0; r < R; ++r) isum[r] = _mm256_set1_epi32(-8 * p.s32[r][b]);
      for (int k = 0; k < 4; ++k) {
        const __m256i v = load256(blk + 32 + 64 * k + 32 * half);
        const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        for (int r = 0; r < R; ++r) {
          const int8_t* xb = p.x[r] + 32 * b;
          isum[r] = dot_u6(isum[r], lo, bcast4(xb + 4 * k));
          isum[r] = dot_u6(isum[r], hi, bcast4(xb + 16 + 4 * k));
        }
      }
    } else {
      for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i v = load256(blk + 32 + 64 * g + 32 * half);
        for (int r = 0; r < R; ++r) isum[r] = dot_s8(isum[r], v, bcast4(p.x[r] + 32 * b + 4 * g));
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(p.d[r][b]));
      acc[r] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(isum[r]), acc[r]);
    }
  }
}

// Bit s of every byte of v moved to bit 4 (other bits: garbage, masked by the caller).
template <int S>
inline __m256i bit_to_4(__m256i v) {
  if constexpr (S < 4) return _mm256_slli_epi16(v, 4 - S);
  if constexpr (S == 4) return v;
  if constexpr (S > 4) return _mm256_srli_epi16(v, S - 4);
}

// q | (bit S of hv) << 4: the fifth bit of a q5_K quant.
template <int S>
inline __m256i with_bit4(__m256i q, __m256i hv) {
  return _mm256_or_si256(q, _mm256_and_si256(bit_to_4<S>(hv), _mm256_set1_epi8(0x10)));
}

// q4_K, and q5_K (kFive) whose nibbles sit where q4_K's do, fifth bits behind them.
template <int R, bool kFive, int C>
inline void k4_pair(const uint8_t* blk, const int8_t* const (&xb)[R], int half, __m256i (&lo)[R], __m256i (&hi)[R]) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  for (int k = 0; k < 8; ++k) {
    const __m256i v = load256(blk + 320 + 64 * (8 * C + k) + 32 * half);
    __m256i l = _mm256_and_si256(v, m4), h = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if constexpr (kFive) {
      const __m256i hv = load256(blk + 2368 + 64 * k + 32 * half);
      l = with_bit4<2 * C>(l, hv);
      h = with_bit4<2 * C + 1>(h, hv);
    }
    for (int r = 0; r < R; ++r) {
      lo[r] = dot_u6(lo[r], l, bcast4(xb[r] + 64 * C + 4 * k));
      hi[r] = dot_u6(hi[r], h, bcast4(xb[r] + 64 * C + 32 + 4 * k));
    }
  }
}

template <int R, bool kFive, class Pf>
void k4_half(const uint8_t* panel, int64_t nb, const Rows<R>& p, int half, __m256 (&acc)[R], const Pf& pf) {
  constexpr size_t kBlockBytes = kFive ? 2880 : 2368;
  for (int64_t b = 0; b < nb; ++b) {
    pf.at_block(b);
    const uint8_t* blk = panel + b * kBlockBytes;
    const int8_t* xb[R];
    for (int r = 0; r < R; ++r) xb[r] = p.x[r] + 256 * b;
    __m256i A[R], B[R];
    for (int r = 0; r < R; ++r) A[r] = B[r] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      __m256i lo[R], hi[R];
      for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
      switch (c) {
        case 0: k4_pair<R, kFive, 0>(blk, xb, half, lo, hi); break;
        case 1: k4_pair<R, kFive, 1>(blk, xb, half, lo, hi); break;
        case 2: k4_pair<R, kFive, 2>(blk, xb, half, lo, hi); break;
        default: k4_pair<R, kFive, 3>(blk, xb, half, lo, hi); break;
      }
      const __m256i sl = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 64 + 32 * c + 8 * half)));
      const __m256i sh = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 80 + 32 * c + 8 * half)));
      for (int r = 0; r < R; ++r) {
        A[r] = _mm256_add_epi32(A[r], _mm256_add_epi32(_mm256_mullo_epi32(sl, lo[r]), _mm256_mullo_epi32(sh, hi[r])));
      }
    }
    for (int k = 0; k < 4; ++k) {
      const __m256i mp = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192 + 32 * k + 16 * half)));
      for (int r = 0; r < R; ++r) {
        int32_t pair;
        std::memcpy(&pair, p.s32[r] + 8 * b + 2 * k, 4);
        B[r] = _mm256_add_epi32(B[r], _mm256_madd_epi16(mp, _mm256_set1_epi32(pair)));
      }
    }
    const __m256 d = load_f16x8(blk + 16 * half), dmin = load_f16x8(blk + 32 + 16 * half);
    for (int r = 0; r < R; ++r) {
      const __m256 dx = _mm256_set1_ps(p.d[r][b]);
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(A[r]), acc[r]);
      acc[r] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(B[r]), acc[r]);
    }
  }
}

template <int R, class Pf>
void q6_k_half(const uint8_t* panel, int64_t nb, const Rows<R>& p, int half, __m256 (&acc)[R], const Pf& pf) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
  for (int64_t b = 0; b < nb; ++b) {
    pf.at_block(b);
    const uint8_t* blk = panel + b * 3360;
    __m256i A[R];
    for (int r = 0; r < R; ++r) A[r] = _mm256_setzero_si256();
    for (int j = 0; j < 16; ++j) {
      const uint8_t* sub = blk + 288 + 192 * j + 32 * half;
      const __m256i va = load256(sub), vb = load256(sub + 64), vh = load256(sub + 128);
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(va, m4), _mm256_and_si256(_mm256_slli_epi16(vh, 4), m30));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(va, 4), m4),
                                         _mm256_and_si256(_mm256_slli_epi16(vh, 2), m30));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(vb, m4), _mm256_and_si256(vh, m30));
      const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(vb, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi16(vh, 2), m30));
      const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 32 + 16 * j + 8 * half)));
      for (int r = 0; r < R; ++r) {
        const int8_t* xb = p.x[r] + 256 * b + 16 * j;
        __m256i is = _mm256_set1_epi32(-32 * p.s16[r][16 * b + j]);
        is = dot_u6(is, q0, bcast4(xb));
        is = dot_u6(is, q1, bcast4(xb + 4));
        is = dot_u6(is, q2, bcast4(xb + 8));
        is = dot_u6(is, q3, bcast4(xb + 12));
        A[r] = _mm256_add_epi32(A[r], _mm256_mullo_epi32(sc, is));
      }
    }
    const __m256 d = load_f16x8(blk + 16 * half);
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(p.d[r][b])), _mm256_cvtepi32_ps(A[r]), acc[r]);
    }
  }
}

template <int R> struct Q8_0K { template <class Pf> static void half(const uint8_t* pn, int64_t nb, const Rows<R>& p, int h, __m256 (&acc)[R], const Pf& pf) { legacy_half<R, false, Pf>(pn, nb, p, h, acc, pf); } };
template <int R> struct Q4_0K { template <class Pf> static void half(const uint8_t* pn, int64_t nb, const Rows<R>& p, int h, __m256 (&acc)[R], const Pf& pf) { legacy_half<R, true, Pf>(pn, nb, p, h, acc, pf); } };
template <int R> struct Q4_KK { template <class Pf> static void half(const uint8_t* pn, int64_t nb, const Rows<R>& p, int h, __m256 (&acc)[R], const Pf& pf) { k4_half<R, false, Pf>(pn, nb, p, h, acc, pf); } };
template <int R> struct Q5_KK { template <class Pf> static void half(const uint8_t* pn, int64_t nb, const Rows<R>& p, int h, __m256 (&acc)[R], const Pf& pf) { k4_half<R, true, Pf>(pn, nb, p, h, acc, pf); } };
template <int R> struct Q6_KK { template <class Pf> static void half(const uint8_t* pn, int64_t nb, const Rows<R>& p, int h, __m256 (&acc)[R], const Pf& pf) { q6_k_half<R, Pf>(pn, nb, p, h, acc, pf); } };

// Each (row tile, half) walk takes an equal share of `next` (tile of n_tiles).
template <template <int> class K, int R, bool kPrefetch>
void run_rows(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n_valid,
              NextPanels next, int tile, int n_tiles) {
  const Rows<R> p(a, r0);
  for (int half = 0; half < 2 && 8 * half < n_valid; ++half) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    if constexpr (kPrefetch) {
      K<R>::half(panel, nb, p, half, acc, PrefetchPacer(next, 2 * tile + half, 2 * n_tiles, nb));
    } else {
      K<R>::half(panel, nb, p, half, acc, NoPrefetch{});
    }
    store_half<R>(acc, y, r0, ldy, half, n_valid);
  }
}

template <template <int> class K, bool kPrefetch>
void tiled_rows(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, int64_t r1, float* y, int64_t ldy,
                int n_valid, NextPanels next) {
  const int n_tiles = static_cast<int>((r1 - r0) / kTile + ((r1 - r0) % kTile != 0));
  int tile = 0;
  int64_t r = r0;
  for (; r + kTile <= r1; r += kTile) {
    run_rows<K, kTile, kPrefetch>(panel, nb, a, r, y, ldy, n_valid, next, tile++, n_tiles);
  }
  switch (r1 - r) {
    case 3: run_rows<K, 3, kPrefetch>(panel, nb, a, r, y, ldy, n_valid, next, tile, n_tiles); break;
    case 2: run_rows<K, 2, kPrefetch>(panel, nb, a, r, y, ldy, n_valid, next, tile, n_tiles); break;
    case 1: run_rows<K, 1, kPrefetch>(panel, nb, a, r, y, ldy, n_valid, next, tile, n_tiles); break;
    default: break;
  }
}

// Without a prefetch range the block loops are instantiated without the pacer (as in
// qmatmul_avx512.cpp: the streaming decode loop keeps its own schedule).
template <template <int> class K>
void tiled(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, int64_t r1, float* y, int64_t ldy,
           int n_valid, NextPanels next) {
  if (next.data == nullptr) {
    tiled_rows<K, false>(panel, nb, a, r0, r1, y, ldy, n_valid, next);
  } else {
    tiled_rows<K, true>(panel, nb, a, r0, r1, y, ldy, n_valid, next);
  }
}

}  // namespace

PanelFn panel_kernel_avx2(tensor::DType type) {
  switch (type) {
    case tensor::DType::kQ8_0: return tiled<Q8_0K>;
    case tensor::DType::kQ4_0: return tiled<Q4_0K>;
    case tensor::DType::kQ4_K: return tiled<Q4_KK>;
    case tensor::DType::kQ5_K: return tiled<Q5_KK>;
    case tensor::DType::kQ6_K: return tiled<Q6_KK>;
    default: return nullptr;
  }
}

}  // namespace keel::kernels::q

#pragma GCC pop_options
