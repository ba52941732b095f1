// AVX-512 VNNI panel kernels of the integer matmul (qmatmul.h defines the arithmetic,
// repack.h the panel layout). One zmm lane per weight row of the panel; up to 4
// activation rows share each weight load (prefill), 1 row is the decode case — both run the
// same per-lane instruction sequence, so results do not depend on the batch.
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "kernels/qmatmul.h"

#pragma GCC push_options
// GCC 12 flags its own _mm512_undefined_* (self-initialized on purpose) in the conversion
// intrinsics as maybe-uninitialized; the warning is about the header, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")

#include "kernels/embedded_broadcast.h"

namespace keel::kernels::q {
namespace {

constexpr int kTileWide = 8;    // activation rows per weight load (prefill)
constexpr int kTileNarrow = 4;

inline __m512 load_f16x16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline __m512i load512(const uint8_t* p) { return _mm512_loadu_si512(p); }

// Decode (one activation row) of the K-quant panels: every line of the block 2 ahead is
// prefetched into L1. Their blocks are 2.3-3.4 KiB of weights and ~200 instructions each,
// so the out-of-order window holds little more than the current block and, with the weights
// cold, the loads of the next ones issued late: one thread, 2048x5632 q4_K read 27 GB/s
// cold against 74 hot, where q4_0 (288-byte blocks) read 42; with it, cold q4_K rows run
// 1.3-1.6x faster (alternating binaries). q6_K measured within the noise either way. A hint:
// never read for results, and a prefetch past the buffer's end does not fault.
template <size_t kBlockBytes>
inline void prefetch_block_ahead(const uint8_t* blk) {
  const uint8_t* ahead = blk + 2 * kBlockBytes;
  for (size_t l = 0; l < kBlockBytes; l += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + l), _MM_HINT_T0);
}

// Per file on purpose: anything instantiated under this file's target pragma must keep
// internal linkage, or the linker could hand another ISA's path a copy it cannot run.
template <int R>
struct RowPtrs {
  const int8_t* x[R];
  const float* d[R];
  const int16_t* s16[R];
  const int16_t* s32[R];
  RowPtrs(const ActRows& a, int64_t r0) {
    for (int r = 0; r < R; ++r) {
      x[r] = a.row_qs(r0 + r);
      d[r] = a.row_d(r0 + r);
      s16[r] = a.sum16 ? a.row_sum16(r0 + r) : nullptr;
      s32[r] = a.row_sum32(r0 + r);
    }
  }
};

// The 4 activation bytes at p, as the u8 x s8 dot's broadcast operand for P panels. One
// panel: folded into the vpdpbusd as a {1to16} memory operand (embedded_broadcast.h). Two
// or more: broadcast once into a register that every panel's vpdpbusd reads, so a block
// issues half the loads. The paired prefill kernels were bound by loads (each folded
// broadcast is one): on Zen 5, 512-row products 20-30% faster (BM_QMatmul/{2,8,12}/2048/
// 5632/{64,512}/1/0, alternating binaries), pp512 q4_0 340 -> 403 t/s. Same bits.
template <int P>
struct XWord {
  const int8_t* x;
  __m512i v = _mm512_setzero_si512();
  explicit XWord(const int8_t* p) : x(p) {
    if constexpr (P > 1) {
      int32_t w;
      std::memcpy(&w, p, sizeof w);
      v = _mm512_set1_epi32(w);
    }
  }
  __m512i dpbusd(__m512i acc, __m512i u) const {
    if constexpr (P > 1) return _mm512_dpbusd_epi32(acc, u, v);
    return dpbusd_bcast(acc, u, x);
  }
};

template <int R>
void store_rows(const __m512 (&acc)[R], float* y, int64_t r0, int64_t ldy, int n_valid) {
  const __mmask16 mask = static_cast<__mmask16>((1u << n_valid) - 1);
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + (r0 + r) * ldy, mask, acc[r]);
}

// q4_0 (kQ4) and q8_0: isum = dot(u, x) - offset * xsum, u the stored unsigned quants.
// P panels (1, or 2 adjacent ones: panel q at panel + q * nb blocks, outputs y + 16 q) share
// each activation broadcast, offset and scale; n_valid counts the last panel's lanes.
// A block's 8 vpdpbusd per lane run as two chains of 4 (q4_0: low / high nibbles; q8_0:
// even / odd groups) added at the end: integer sums, so the same bits, and half the
// latency a lane waits on. One thread, hot (BM_QMatmul/{2,8}/2048/5632/{8,64,512}/1/0,
// alternated 3x): q4_0 521-536 -> 538-597, 576-586 -> 621-641, 573-581 -> 594-615 GOPS;
// q8_0 64 rows 438-542 -> 496-611, 512 rows 470-543 -> 487-568.
template <int R, int P, bool kQ4, class Pf>
void legacy_rows(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, float* y,
                 int64_t ldy, int n_valid, const Pf& pf) {
  constexpr size_t kBlockBytes = kQ4 ? 288 : 544;
  constexpr int kOffset = kQ4 ? 8 : 128;
  const size_t stride = static_cast<size_t>(nb) * kBlockBytes;
  const RowPtrs<R> p(a, r0);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512 acc[P][R];
  for (int q = 0; q < P; ++q) {
    for (int r = 0; r < R; ++r) acc[q][r] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    pf.at_block(b);
    const uint8_t* blk = panel + b * kBlockBytes;
    __m512i isum[P][R];
    for (int r = 0; r < R; ++r) {
      const __m512i off = _mm512_set1_epi32(-kOffset * p.s32[r][b]);
      for (int q = 0; q < P; ++q) isum[q][r] = off;
    }
    if constexpr (kQ4) {
      __m512i hsum[P][R];
      for (int q = 0; q < P; ++q) {
        for (int r = 0; r < R; ++r) hsum[q][r] = _mm512_setzero_si512();
      }
      for (int k = 0; k < 4; ++k) {
        __m512i lo[P], hi[P];
        for (int q = 0; q < P; ++q) {
          const __m512i v = load512(blk + q * stride + 32 + 64 * k);
          lo[q] = _mm512_and_si512(v, m4);
          hi[q] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
        for (int r = 0; r < R; ++r) {
          const int8_t* xb = p.x[r] + 32 * b;
          const XWord<P> xl(xb + 4 * k), xh(xb + 16 + 4 * k);
          for (int q = 0; q < P; ++q) {
            isum[q][r] = xl.dpbusd(isum[q][r], lo[q]);
            hsum[q][r] = xh.dpbusd(hsum[q][r], hi[q]);
          }
        }
      }
      for (int q = 0; q < P; ++q) {
        for (int r = 0; r < R; ++r) isum[q][r] = _mm512_add_epi32(isum[q][r], hsum[q][r]);
      }
    } else {
      // Groups 1, 3, 5, 7 in a second chain, as for q4_0's high nibbles. Written as pairs of
      // groups: a parity test inside the loop left the 8-row single-panel tile un-unrolled,
      // its sums in memory, at 163-188 GOPS instead of 440-470.
      __m512i odd[P][R];
      for (int q = 0; q < P; ++q) {
        for (int r = 0; r < R; ++r) odd[q][r] = _mm512_setzero_si512();
      }
      for (int g = 0; g < 8; g += 2) {
        __m512i ve[P], vo[P];
        for (int q = 0; q < P; ++q) {
          ve[q] = load512(blk + q * stride + 32 + 64 * g);
          vo[q] = load512(blk + q * stride + 96 + 64 * g);
        }
        for (int r = 0; r < R; ++r) {
          const int8_t* xg = p.x[r] + 32 * b + 4 * g;
          const XWord<P> xe(xg), xo(xg + 4);
          for (int q = 0; q < P; ++q) {
            isum[q][r] = xe.dpbusd(isum[q][r], ve[q]);
            odd[q][r] = xo.dpbusd(odd[q][r], vo[q]);
          }
        }
      }
      for (int q = 0; q < P; ++q) {
        for (int r = 0; r < R; ++r) isum[q][r] = _mm512_add_epi32(isum[q][r], odd[q][r]);
      }
    }
    for (int q = 0; q < P; ++q) {
      const __m512 dw = load_f16x16(blk + q * stride);
      for (int r = 0; r < R; ++r) {
        const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(p.d[r][b]));
        acc[q][r] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(isum[q][r]), acc[q][r]);
      }
    }
  }
  for (int q = 0; q < P; ++q) store_rows<R>(acc[q], y + 16 * q, r0, ldy, q == P - 1 ? n_valid : 16);
}

// Bit s of every byte of v moved to bit 4 (other bits: garbage, masked by the caller).
template <int S>
inline __m512i bit_to_4(__m512i v) {
  if constexpr (S < 4) return _mm512_slli_epi16(v, 4 - S);
  if constexpr (S == 4) return v;
  if constexpr (S > 4) return _mm512_srli_epi16(v, S - 4);
}

// q | (bit S of hv) << 4: the fifth bit of a q5_K quant (vpternlogd: A | (B & C)).
template <int S>
inline __m512i with_bit4(__m512i q, __m512i hv) {
  return _mm512_ternarylogic_epi32(q, bit_to_4<S>(hv), _mm512_set1_epi8(0x10), 0xF8);
}

// q4_K, and q5_K (kFive) whose nibbles sit where q4_K's do, fifth bits behind them; P
// adjacent panels (as legacy_rows) share each activation broadcast.
template <int R, int P, bool kFive, int C>
inline void k4_pair(const uint8_t* blk, size_t stride, const int8_t* const (&xb)[R], __m512i (&lo)[P][R],
                    __m512i (&hi)[P][R]) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  for (int q = 0; q < P; ++q) {
    for (int r = 0; r < R; ++r) lo[q][r] = hi[q][r] = _mm512_setzero_si512();
  }
  for (int k = 0; k < 8; ++k) {
    __m512i l[P], h[P];
    for (int q = 0; q < P; ++q) {
      const __m512i v = load512(blk + q * stride + 320 + 64 * (8 * C + k));
      l[q] = _mm512_and_si512(v, m4);
      h[q] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if constexpr (kFive) {
        const __m512i hv = load512(blk + q * stride + 2368 + 64 * k);
        l[q] = with_bit4<2 * C>(l[q], hv);
        h[q] = with_bit4<2 * C + 1>(h[q], hv);
      }
    }
    for (int r = 0; r < R; ++r) {
      const XWord<P> xl(xb[r] + 64 * C + 4 * k), xh(xb[r] + 64 * C + 32 + 4 * k);
      for (int q = 0; q < P; ++q) {
        lo[q][r] = xl.dpbusd(lo[q][r], l[q]);
        hi[q][r] = xh.dpbusd(hi[q][r], h[q]);
      }
    }
  }
}

template <int R, int P, bool kFive, class Pf>
void k4_rows(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, float* y,
             int64_t ldy, int n_valid, const Pf& pf) {
  constexpr size_t kBlockBytes = kFive ? 2880 : 2368;
  const size_t stride = static_cast<size_t>(nb) * kBlockBytes;
  const RowPtrs<R> p(a, r0);
  __m512 acc[P][R];
  for (int q = 0; q < P; ++q) {
    for (int r = 0; r < R; ++r) acc[q][r] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    pf.at_block(b);
    const uint8_t* blk = panel + b * kBlockBytes;
    if constexpr (R == 1 && P == 1) prefetch_block_ahead<kBlockBytes>(blk);
    const int8_t* xb[R];
    for (int r = 0; r < R; ++r) xb[r] = p.x[r] + 256 * b;
    __m512i A[P][R], B[P][R];
    for (int q = 0; q < P; ++q) {
      for (int r = 0; r < R; ++r) A[q][r] = B[q][r] = _mm512_setzero_si512();
    }
    for (int c = 0; c < 4; ++c) {
      __m512i lo[P][R], hi[P][R];
      switch (c) {
        case 0: k4_pair<R, P, kFive, 0>(blk, stride, xb, lo, hi); break;
        case 1: k4_pair<R, P, kFive, 1>(blk, stride, xb, lo, hi); break;
        case 2: k4_pair<R, P, kFive, 2>(blk, stride, xb, lo, hi); break;
        default: k4_pair<R, P, kFive, 3>(blk, stride, xb, lo, hi); break;
      }
      for (int q = 0; q < P; ++q) {
        const uint8_t* sc = blk + q * stride + 64 + 32 * c;
        const __m512i sl = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
        const __m512i sh = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16)));
        for (int r = 0; r < R; ++r) {
          A[q][r] = _mm512_add_epi32(A[q][r], _mm512_add_epi32(_mm512_mullo_epi32(sl, lo[q][r]),
                                                               _mm512_mullo_epi32(sh, hi[q][r])));
        }
      }
    }
    for (int k = 0; k < 4; ++k) {
      __m512i mp[P];
      for (int q = 0; q < P; ++q) {
        mp[q] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + q * stride + 192 + 32 * k)));
      }
      for (int r = 0; r < R; ++r) {
        for (int q = 0; q < P; ++q) B[q][r] = dpwssd_bcast(B[q][r], mp[q], p.s32[r] + 8 * b + 2 * k);
      }
    }
    for (int q = 0; q < P; ++q) {
      const __m512 d = load_f16x16(blk + q * stride), dmin = load_f16x16(blk + q * stride + 32);
      for (int r = 0; r < R; ++r) {
        const __m512 dx = _mm512_set1_ps(p.d[r][b]);
        acc[q][r] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(A[q][r]), acc[q][r]);
        acc[q][r] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(B[q][r]), acc[q][r]);
      }
    }
  }
  for (int q = 0; q < P; ++q) store_rows<R>(acc[q], y + 16 * q, r0, ldy, q == P - 1 ? n_valid : 16);
}

// q6_K; P adjacent panels (as legacy_rows) share each activation broadcast.
template <int R, int P, class Pf>
void q6_k_rows(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, float* y,
               int64_t ldy, int n_valid, const Pf& pf) {
  constexpr size_t kBlockBytes = 3360;
  const size_t stride = static_cast<size_t>(nb) * kBlockBytes;
  const RowPtrs<R> p(a, r0);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  __m512 acc[P][R];
  for (int q = 0; q < P; ++q) {
    for (int r = 0; r < R; ++r) acc[q][r] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    pf.at_block(b);
    const uint8_t* blk = panel + b * kBlockBytes;
    if constexpr (R == 1 && P == 1) prefetch_block_ahead<kBlockBytes>(blk);
    __m512i A[P][R];
    for (int q = 0; q < P; ++q) {
      for (int r = 0; r < R; ++r) A[q][r] = _mm512_setzero_si512();
    }
    for (int j = 0; j < 16; ++j) {
      __m512i q0[P], q1[P], q2[P], q3[P], sc[P];
      for (int q = 0; q < P; ++q) {
        const uint8_t* sub = blk + q * stride + 288 + 192 * j;
        const __m512i va = load512(sub), vb = load512(sub + 64), vh = load512(sub + 128);
        q0[q] = _mm512_or_si512(_mm512_and_si512(va, m4), _mm512_and_si512(_mm512_slli_epi16(vh, 4), m30));
        q1[q] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(va, 4), m4),
                                _mm512_and_si512(_mm512_slli_epi16(vh, 2), m30));
        q2[q] = _mm512_or_si512(_mm512_and_si512(vb, m4), _mm512_and_si512(vh, m30));
        q3[q] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(vb, 4), m4),
                                _mm512_and_si512(_mm512_srli_epi16(vh, 2), m30));
        sc[q] = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + q * stride + 32 + 16 * j)));
      }
      for (int r = 0; r < R; ++r) {
        const int8_t* xb = p.x[r] + 256 * b + 16 * j;
        const __m512i off = _mm512_set1_epi32(-32 * p.s16[r][16 * b + j]);
        const XWord<P> x0(xb), x1(xb + 4), x2(xb + 8), x3(xb + 12);
        for (int q = 0; q < P; ++q) {
          __m512i is = x0.dpbusd(off, q0[q]);
          is = x1.dpbusd(is, q1[q]);
          is = x2.dpbusd(is, q2[q]);
          is = x3.dpbusd(is, q3[q]);
          A[q][r] = _mm512_add_epi32(A[q][r], _mm512_mullo_epi32(sc[q], is));
        }
      }
    }
    for (int q = 0; q < P; ++q) {
      const __m512 d = load_f16x16(blk + q * stride);
      for (int r = 0; r < R; ++r) {
        acc[q][r] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(p.d[r][b])), _mm512_cvtepi32_ps(A[q][r]), acc[q][r]);
      }
    }
  }
  for (int q = 0; q < P; ++q) store_rows<R>(acc[q], y + 16 * q, r0, ldy, q == P - 1 ? n_valid : 16);
}

// Activation rows in tiles of kMax (then 4, 2, 1 for the rest): the tile size only decides
// which rows share a weight load, never a lane's arithmetic. The tiles share `next` evenly.
template <int kMax>
constexpr int tile_count(int64_t n) {
  int64_t c = n / kMax, rest = n % kMax;
  if (kMax > 4 && rest >= 4) ++c, rest -= 4;
  if (rest >= 2) ++c, rest -= 2;
  return static_cast<int>(c + rest);
}

template <template <int> class K, int kMax, class MakePf>
void tiled_rows(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, int64_t r1, float* y,
                int64_t ldy, int n_valid, MakePf pacer) {
  int64_t r = r0;
  for (; r + kMax <= r1; r += kMax) K<kMax>::run(panel, nb, a, r, y, ldy, n_valid, pacer());
  if constexpr (kMax > 4) {
    if (r + 4 <= r1) K<4>::run(panel, nb, a, r, y, ldy, n_valid, pacer()), r += 4;
  }
  if (r + 2 <= r1) K<2>::run(panel, nb, a, r, y, ldy, n_valid, pacer()), r += 2;
  if (r < r1) K<1>::run(panel, nb, a, r, y, ldy, n_valid, pacer());
}

// Without a prefetch range the kernels are instantiated without the pacer, so the block
// loop's code is exactly the one tuned for streaming (the compiler schedules the weight
// loads differently when the pacer's loop sits in the block loop).
template <template <int> class K, int kMax>
void tiled(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, int64_t r1, float* y,
           int64_t ldy, int n_valid, NextPanels next) {
  if (next.data == nullptr) {
    tiled_rows<K, kMax>(panel, nb, a, r0, r1, y, ldy, n_valid, [] { return NoPrefetch{}; });
    return;
  }
  const int n_tiles = tile_count<kMax>(r1 - r0);
  int tile = 0;
  tiled_rows<K, kMax>(panel, nb, a, r0, r1, y, ldy, n_valid,
                      [&] { return PrefetchPacer(next, tile++, n_tiles, nb); });
}

template <int R> struct Q8_0K { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { legacy_rows<R, 1, false, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q4_0K { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { legacy_rows<R, 1, true, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q8_0K2 { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { legacy_rows<R, 2, false, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q4_0K2 { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { legacy_rows<R, 2, true, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q4_KK { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { k4_rows<R, 1, false, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q4_KK2 { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { k4_rows<R, 2, false, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q5_KK { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { k4_rows<R, 1, true, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q5_KK2 { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { k4_rows<R, 2, true, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q6_KK { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { q6_k_rows<R, 1, Pf>(p, nb, a, r0, y, ldy, n, pf); } };
template <int R> struct Q6_KK2 { template <class Pf> static void run(const uint8_t* p, int64_t nb, const ActRows& a, int64_t r0, float* y, int64_t ldy, int n, const Pf& pf) { q6_k_rows<R, 2, Pf>(p, nb, a, r0, y, ldy, n, pf); } };

// q4_K pairs keep 6 vectors a row, so 4-row tiles spill. That costs more than it saves when
// the panels are hot (a prefill's row chunks: 3 rows 3.5% faster than 4 at 512 rows). A
// decode batch of up to 8 rows reads cold panels, and 4-row tiles pass over each pair twice
// instead of three times (3 + 3 + 2). Measured in one process, alternating call by call
// (2026-12-07): 2048x5632 8 rows cold, 533 -> 521 us; 2048x2048, 199 -> 190 us; the
// `--parallel 8` step of the 1b q4_K_M model, 34544 -> 34116 us.
void q4_k_pairs(const uint8_t* panel, int64_t nb, const ActRows& a, int64_t r0, int64_t r1, float* y,
                int64_t ldy, int n_valid, NextPanels next) {
  if (r1 - r0 <= 8) {
    tiled<Q4_KK2, 4>(panel, nb, a, r0, r1, y, ldy, n_valid, next);
  } else {
    tiled<Q4_KK2, 3>(panel, nb, a, r0, r1, y, ldy, n_valid, next);
  }
}

}  // namespace

PanelFn panel_kernel_avx512(tensor::DType type) {
  switch (type) {
    // Register budget (32 zmm): legacy and q6_K keep 2 vectors per row, q4_K 5.
    case tensor::DType::kQ8_0: return tiled<Q8_0K, kTileWide>;
    case tensor::DType::kQ4_0: return tiled<Q4_0K, kTileWide>;
    case tensor::DType::kQ4_K: return tiled<Q4_KK, kTileNarrow>;
    case tensor::DType::kQ5_K: return tiled<Q5_KK, kTileNarrow>;
    case tensor::DType::kQ6_K: return tiled<Q6_KK, kTileWide>;
    default: return nullptr;
  }
}

PanelFn panel_pair_kernel_avx512(tensor::DType type) {
  switch (type) {
    // Two panels: 4 vectors per row (accumulators and block sums), so 4 rows per tile.
    // q6_K paired: one thread, 2048x5632, hot (BM_QMatmul/14/2048/5632/{8,64,512}/1/0),
    // alternating binaries: 252-269 -> 367-373, 290-316 -> 399-420, 282-333 -> 407-421 GOPS
    // (3-row tiles: 307-374; 2-row: 258-301).
    case tensor::DType::kQ8_0: return tiled<Q8_0K2, kTileNarrow>;
    case tensor::DType::kQ4_0: return tiled<Q4_0K2, kTileNarrow>;
    case tensor::DType::kQ4_K: return q4_k_pairs;  // 4-row tiles up to 8 rows, else 3
    case tensor::DType::kQ5_K: return tiled<Q5_KK2, 2>;
    case tensor::DType::kQ6_K: return tiled<Q6_KK2, kTileNarrow>;
    default: return nullptr;
  }
}

int64_t panel_pair_min_rows_avx512(tensor::DType type) {
  if (!panel_pair_kernel_avx512(type)) return std::numeric_limits<int64_t>::max();
  // q5_K's pair tile is 2 rows against the single kernel's 4: one thread, 2048x5632, hot
  // (BM_QMatmul/13/2048/5632/{8,64}/1/0): 8 rows 204-209 GOPS paired, 266-274 single;
  // 64 rows 222-228 paired, 206-214 single. The others pair from 4 rows.
  return type == tensor::DType::kQ5_K ? 32 : 4;
}

}  // namespace keel::kernels::q

#pragma GCC diagnostic pop
#pragma GCC pop_options
