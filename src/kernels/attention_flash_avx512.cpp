// AVX-512 flash tile (attention_flash.h): the twin's bits. K/V rows are read straight from
// the page (f32, f16 via vcvtph2ps, bf16 by shifting, q8_0 rows as int8 → f32 times the block
// scale). Each K row is loaded once per block of up to 8 query heads; the 16 lane sums of
// 16 keys are reduced together by a transposed form of tree16_sum (same pairs, same order).
// q8_0 K is scored by integer block dots (from key tiles without transposing), and q8_0 V in
// pair tiles weighted by vpdpwssd on the tile's 15-bit weights (step 5).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "kernels/attention_flash.h"
#include "kernels/exp_defined.h"
#include "tensor/blocks.h"
#include "tensor/q8_tile.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")
// The definition separates multiplies from adds except where it says fma.
#pragma GCC optimize("fp-contract=off")
// GCC 12 reports its own _mm512_undefined_* inside the conversion intrinsics as
// maybe-uninitialized (a false positive about the header, as in exp_defined.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/embedded_broadcast.h"

namespace keel::kernels::detail {
namespace {

using tensor::DType;

// 16 elements from index i of a row (i a multiple of 16; for q8_0 the row length is a
// multiple of 32, so the 16 lie in one block).
template <DType T>
inline __m512 load16(const uint8_t* row, int64_t i) {
  if constexpr (T == DType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i)));
  } else if constexpr (T == DType::kBF16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  } else {
    const uint8_t* blk = row + (i / 32) * sizeof(tensor::BlockQ8_0);
    uint16_t h;
    std::memcpy(&h, blk, 2);
    const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + i % 32)));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(_cvtsh_ss(h)));
  }
}

// A whole q8_0 block (32 elements from index i, a multiple of 32): one scale conversion.
inline void load_q8_block(const uint8_t* row, int64_t i, __m512& lo, __m512& hi) {
  const uint8_t* blk = row + (i / 32) * sizeof(tensor::BlockQ8_0);
  uint16_t h;
  std::memcpy(&h, blk, 2);
  const __m512 d = _mm512_set1_ps(_cvtsh_ss(h));
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  lo = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q))), d);
  hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1))), d);
}

// The first n (< 16) elements from index i, zeros elsewhere (never q8_0).
template <DType T>
inline __m512 load16_tail(const uint8_t* row, int64_t i, __mmask16 m) {
  if constexpr (T == DType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * i));
  } else {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row + 2 * i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
}

inline __m256 hi256(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

// tree16 level 1 of two keys: [t_a (8) | t_b (8)], t[l] = a[l] + a[l + 8].
inline __m512 level1(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
}

// Levels 2–4 of tree16_sum for 16 keys whose level-1 results are t[0..8) (t[p] holds keys
// 2p, 2p+1); returns the 16 sums in key order.
inline __m512 levels234(const __m512* t) {
  __m512 u[4], w[2];
  for (int r = 0; r < 4; ++r) {  // u[l] = t[l] + t[l + 4]: lanes [key 4r .. 4r+3] × 4
    const __m512 a = t[2 * r], b = t[2 * r + 1];
    u[r] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
  }
  for (int s = 0; s < 2; ++s) {  // w[l] = u[l] + u[l + 2]; 128-bit lane i: keys i+8s, i+8s+4
    const __m512 a = u[2 * s], b = u[2 * s + 1];
    w[s] = _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE));
  }
  // dot = w[0] + w[1]; element 4i + k holds key i + 4k
  const __m512 d = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, d);
}

inline float reduce_max(__m512 v) {  // tree16_max
  const __m256 t = _mm256_max_ps(_mm512_castps512_ps256(v), hi256(v));
  const __m128 u = _mm_max_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  const __m128 w = _mm_max_ps(u, _mm_movehl_ps(u, u));
  return _mm_cvtss_f32(_mm_max_ss(w, _mm_shuffle_ps(w, w, 1)));
}

// Prefetch hint for row j of the next tile (k or v side) into L2.
inline void prefetch_row(const uint8_t* rows, size_t stride, size_t bytes, int64_t j, int64_t n) {
  if (!rows || j >= n) return;
  const uint8_t* r = rows + j * stride;
  for (size_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(r + b), _MM_HINT_T1);
  _mm_prefetch(reinterpret_cast<const char*>(r + bytes - 1), _MM_HINT_T1);
}

inline __mmask16 lanes_below(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// Step 2 for the 16 keys of group g0: s_j of the visible lanes [lo, hi) from their dots,
// into out[0, 16) (the group's scores of one head).
inline void store_scores(const FlashShape& sh, __m512 dot, int64_t lo, int64_t hi, float* out) {
  if (sh.softcap > 0.0f) {
    alignas(64) float tmp[16];
    _mm512_store_ps(tmp, dot);
    for (int64_t j = lo; j < hi; ++j) out[j] = flash_score(tmp[j], sh);
  } else {
    const __mmask16 visible = static_cast<__mmask16>(lanes_below(hi) & ~lanes_below(lo));
    _mm512_mask_storeu_ps(out, visible, _mm512_mul_ps(dot, _mm512_set1_ps(sh.scale)));
  }
}

// Step 1–2 for NB heads, float K (f32 / f16 / bf16): scores s[h * sp + j] for the visible j
// of the tile (the caller pre-filled −inf). `zero_row` stands in for the invisible partner of a key pair.
template <DType KT, int NB>
void scores_block(const FlashShape& sh, const FlashPage& t, const float* const* q, float* s,
                  int64_t sp, const uint8_t* zero_row) {
  __m512 tb[NB][8];  // level-1 sums of key pairs; pairs left out end as −inf lanes
  for (int h = 0; h < NB; ++h)
    for (int p = 0; p < 8; ++p) tb[h][p] = _mm512_setzero_ps();
  const int64_t dk = sh.dk, full = dk / 16 * 16;
  const __mmask16 tail = lanes_below(dk - full);
  for (int64_t g0 = t.j0 / 16 * 16; g0 < t.j1; g0 += 16) {
    for (int p = 0; p < 8; ++p) {
      const int64_t ja = g0 + 2 * p, jb = ja + 1;
      prefetch_row(t.next_k, t.k_stride, t.next_k_bytes, ja - t.j0 / 16 * 16, t.n_next);
      prefetch_row(t.next_k, t.k_stride, t.next_k_bytes, jb - t.j0 / 16 * 16, t.n_next);
      const bool va = ja >= t.j0 && ja < t.j1, vb = jb >= t.j0 && jb < t.j1;
      if (!va && !vb) continue;  // both lanes end as −inf
      const uint8_t* ra = va ? t.k + ja * t.k_stride : zero_row;
      const uint8_t* rb = vb ? t.k + jb * t.k_stride : zero_row;
      __m512 a0[NB], a1[NB];
      for (int h = 0; h < NB; ++h) a0[h] = a1[h] = _mm512_setzero_ps();
      int64_t i = 0;
      for (; i < full; i += 16) {
        const __m512 ka = load16<KT>(ra, i), kb = load16<KT>(rb, i);
        for (int h = 0; h < NB; ++h) {
          __m512 qv = _mm512_loadu_ps(q[h] + i);
          // One load for both keys' fmas: left alone, GCC folds the load into each fma,
          // and this loop was then bound by loads (one per fma) on Zen 5: 16-27% faster
          // (BM_FlashAttention/1/{512/512,1/4096}/1/3/1/0, alternating binaries). Same bits.
          __asm__("" : "+v"(qv));
          a0[h] = _mm512_fmadd_ps(qv, ka, a0[h]);
          a1[h] = _mm512_fmadd_ps(qv, kb, a1[h]);
        }
      }
      if constexpr (KT != DType::kQ8_0) {
        if (i < dk) {  // lanes past the row keep their sums (the twin never touches them)
          const __m512 ka = load16_tail<KT>(ra, i, tail), kb = load16_tail<KT>(rb, i, tail);
          for (int h = 0; h < NB; ++h) {
            const __m512 qv = _mm512_loadu_ps(q[h] + i);
            a0[h] = _mm512_mask3_fmadd_ps(qv, ka, a0[h], tail);
            a1[h] = _mm512_mask3_fmadd_ps(qv, kb, a1[h], tail);
          }
        }
      }
      for (int h = 0; h < NB; ++h) tb[h][p] = level1(a0[h], a1[h]);
    }
    const int64_t lo = std::max(t.j0, g0) - g0, hi = std::min(t.j1, g0 + 16) - g0;
    for (int h = 0; h < NB; ++h) store_scores(sh, levels234(tb[h]), lo, hi, s + h * sp + g0);
  }
}

// Steps 1–2 for NB heads from K widened element-major (FlashPage::k_major): 16 keys in the
// lanes, so the definition's partial sums a[l] of 16 keys are one register each and tree16
// is vertical adds (t[l] = a[l] + a[l + 8], then the tree of levels234 on whole registers),
// about half the work of scores_block, whose sums lie across lanes. NC = dk / 16 when the
// K registers of one l fit (their loads are then shared by the NB heads), 0 for any dk.
template <int NB, int NC>
void scores_major(const FlashShape& sh, const FlashPage& t, const float* const* q, float* s, int64_t sp) {
  const int64_t dk = sh.dk, nc = NC > 0 ? NC : dk / 16;
  for (int64_t g0 = t.j0 / 16 * 16; g0 < t.j1; g0 += 16) {
    const float* kg = t.k_major + g0 * dk;  // element e of the 16 keys at kg + 16 e
    alignas(64) float tl[NB][8][16];        // t[l] of each head, keys in the lanes
    for (int l = 0; l < 8; ++l) {
      if constexpr (NC > 0) {
        __m512 ka[NC], kb[NC];
        for (int c = 0; c < NC; ++c) {
          ka[c] = _mm512_loadu_ps(kg + 16 * (l + 16 * c));
          kb[c] = _mm512_loadu_ps(kg + 16 * (l + 8 + 16 * c));
        }
        for (int h = 0; h < NB; ++h) {
          __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
          for (int c = 0; c < NC; ++c) a = _mm512_fmadd_ps(_mm512_set1_ps(q[h][l + 16 * c]), ka[c], a);
          for (int c = 0; c < NC; ++c) b = _mm512_fmadd_ps(_mm512_set1_ps(q[h][l + 8 + 16 * c]), kb[c], b);
          _mm512_store_ps(tl[h][l], _mm512_add_ps(a, b));
        }
      } else {
        for (int h = 0; h < NB; ++h) {
          __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
          for (int64_t c = 0; c < nc; ++c) {
            a = _mm512_fmadd_ps(_mm512_set1_ps(q[h][l + 16 * c]), _mm512_loadu_ps(kg + 16 * (l + 16 * c)), a);
            b = _mm512_fmadd_ps(_mm512_set1_ps(q[h][l + 8 + 16 * c]), _mm512_loadu_ps(kg + 16 * (l + 8 + 16 * c)), b);
          }
          _mm512_store_ps(tl[h][l], _mm512_add_ps(a, b));
        }
      }
    }
    const int64_t lo = std::max(t.j0, g0) - g0, hi = std::min(t.j1, g0 + 16) - g0;
    for (int h = 0; h < NB; ++h) {
      auto T = [&](int l) { return _mm512_load_ps(tl[h][l]); };
      const __m512 u0 = _mm512_add_ps(T(0), T(4)), u1 = _mm512_add_ps(T(1), T(5));
      const __m512 u2 = _mm512_add_ps(T(2), T(6)), u3 = _mm512_add_ps(T(3), T(7));
      store_scores(sh, _mm512_add_ps(_mm512_add_ps(u0, u2), _mm512_add_ps(u1, u3)), lo, hi, s + h * sp + g0);
    }
  }
}

template <int NB>
void scores_major_nc(const FlashShape& sh, const FlashPage& t, const float* const* q, float* s, int64_t sp) {
  switch (sh.dk) {
    case 64: scores_major<NB, 4>(sh, t, q, s, sp); break;
    case 128: scores_major<NB, 8>(sh, t, q, s, sp); break;
    default: scores_major<NB, 0>(sh, t, q, s, sp); break;
  }
}

void scores_major_all(const FlashShape& sh, const FlashPage& t, const FlashHeads& hd, float* s, int64_t sp) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 8) {
    const float* const* q = hd.q + h0;
    float* sb = s + h0 * sp;
    switch (std::min<int64_t>(8, hd.n - h0)) {
      case 1: scores_major_nc<1>(sh, t, q, sb, sp); break;
      case 2: scores_major_nc<2>(sh, t, q, sb, sp); break;
      case 3: scores_major_nc<3>(sh, t, q, sb, sp); break;
      case 4: scores_major_nc<4>(sh, t, q, sb, sp); break;
      case 5: scores_major_nc<5>(sh, t, q, sb, sp); break;
      case 6: scores_major_nc<6>(sh, t, q, sb, sp); break;
      case 7: scores_major_nc<7>(sh, t, q, sb, sp); break;
      default: scores_major_nc<8>(sh, t, q, sb, sp); break;
    }
  }
}

// vpermt2d indices of the q8_0 K transpose (scores_q8_block), built once.
struct Q8TransposeIdx {
  __m512i a[2], b[2], c[2];
  Q8TransposeIdx() {
    alignas(64) int32_t t[16];
    for (int h = 0; h < 2; ++h) {  // A: keys 4i..4i+3 × groups 4h..4h+3 from R_2i, R_2i+1
      for (int cc = 0; cc < 4; ++cc)
        for (int kk = 0; kk < 4; ++kk) t[4 * cc + kk] = (kk / 2) * 16 + (kk % 2) * 8 + 4 * h + cc;
      a[h] = _mm512_load_si512(t);
    }
    for (int x = 0; x < 2; ++x) {  // B: keys 0..7 × groups 2x, 2x+1 (of the 4) from two A's
      for (int cl = 0; cl < 2; ++cl)
        for (int key = 0; key < 8; ++key) t[8 * cl + key] = (key / 4) * 16 + 4 * (2 * x + cl) + key % 4;
      b[x] = _mm512_load_si512(t);
    }
    for (int cl = 0; cl < 2; ++cl) {  // C: keys 0..15 of one group from two B's
      for (int key = 0; key < 16; ++key) t[key] = (key / 8) * 16 + 8 * cl + key % 8;
      c[cl] = _mm512_load_si512(t);
    }
  }
};

// Block b of 16 keys whose quants are already transposed (kt[c]: key j's 4-byte group c in
// lane j, +128) and whose scales are kd: dot[h] += (qd · kd) · isum for NB heads from h0.
template <int NB>
__attribute__((always_inline)) inline void q8_block_dots(const __m512i* kt, __m512 kd, const FlashHeads& hd,
                                                         int64_t h0, int64_t b, __m512* dot) {
  // Groups outer, heads inner: NB independent chains in flight, each starting from
  // −128 · Σqq (integer sums: the order does not change them). The heads' blocks lie side by
  // side (Q8QueryBlock), so one pointer and constant offsets reach them all: with a pointer
  // per head, the 8-head form spilled its pointers and sums every block.
  __m512i acc[NB];
  const Q8QueryBlock* qb = hd.qblocks + b * hd.n + h0;
#pragma GCC unroll 8
  for (int h = 0; h < NB; ++h) acc[h] = _mm512_set1_epi32(qb[h].minus_128_sum);
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {
#pragma GCC unroll 8
    for (int h = 0; h < NB; ++h) acc[h] = dpbusd_bcast(acc[h], kt[c], qb[h].qs + 4 * c);
  }
#pragma GCC unroll 8
  for (int h = 0; h < NB; ++h) {
    const __m512 dd = _mm512_mul_ps(_mm512_set1_ps(qb[h].d), kd);
    dot[h] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(acc[h]), dot[h]);
  }
}

// The dot products of 16 keys (row(p) gives key p's K row) with NB heads from h0, unscaled.
// Block b's quants of the 16 keys are transposed so that lane j of kt[c] holds key j's
// 4-byte group c; vpdpbusd against the query's group c (broadcast) then sums 4 products per
// lane, with no horizontal sums. vpdpbusd wants one unsigned operand: K gets +128 (xor 0x80)
// and each sum starts from −128 · Σqq of the block — exact integers, the twin's isum.
template <int NB, class RowFn>
__attribute__((always_inline)) inline void q8_group_dots(const RowFn& row, const FlashHeads& hd, int64_t h0, int64_t nb, __m512* dot) {
  static const Q8TransposeIdx idx;
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int h = 0; h < NB; ++h) dot[h] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const size_t off = static_cast<size_t>(b) * sizeof(tensor::BlockQ8_0);
    __m512i r[8];
    int32_t kd_pairs[8];  // the f16 scales of keys 2p, 2p + 1
    for (int p = 0; p < 8; ++p) {
      const uint8_t* ra = row(2 * p) + off;
      const uint8_t* rb = row(2 * p + 1) + off;
      uint16_t da, db;
      std::memcpy(&da, ra, 2);
      std::memcpy(&db, rb, 2);
      kd_pairs[p] = static_cast<int32_t>(da | (uint32_t{db} << 16));
      r[p] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ra + 2))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rb + 2)), 1);
    }
    __m512i a[4][2], bb[2][2][2], kt[8];
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < 2; ++h) a[i][h] = _mm512_permutex2var_epi32(r[2 * i], idx.a[h], r[2 * i + 1]);
    for (int h = 0; h < 2; ++h)
      for (int ip = 0; ip < 2; ++ip)
        for (int x = 0; x < 2; ++x)
          bb[h][ip][x] = _mm512_permutex2var_epi32(a[2 * ip][h], idx.b[x], a[2 * ip + 1][h]);
    for (int h = 0; h < 2; ++h)
      for (int x = 0; x < 2; ++x)
        for (int cl = 0; cl < 2; ++cl)
          kt[4 * h + 2 * x + cl] = _mm512_xor_si512(
              _mm512_permutex2var_epi32(bb[h][0][x], idx.c[cl], bb[h][1][x]), bias);
    const __m512 kd = _mm512_cvtph_ps(_mm256_setr_epi32(kd_pairs[0], kd_pairs[1], kd_pairs[2], kd_pairs[3],
                                                         kd_pairs[4], kd_pairs[5], kd_pairs[6], kd_pairs[7]));
    q8_block_dots<NB>(kt, kd, hd, h0, b, dot);
  }
}

// q8_group_dots for the 16 keys [g0, g0 + 16) of a key tile (q8_tile::key_groups; g0 a
// multiple of 16): the quants come transposed and the scales contiguous, so a block is 8
// loads and one conversion. Same sums, same bits.
template <int NB>
__attribute__((always_inline)) inline void q8_tile_dots(const uint8_t* tile, int64_t rows, int64_t dk, int64_t g0,
                                                        const FlashHeads& hd, int64_t h0, __m512* dot) {
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  const uint8_t* codes = tile + tensor::q8_tile::codes_offset(tensor::q8_tile::key_groups(rows, dk)) + g0 * dk;
  for (int h = 0; h < NB; ++h) dot[h] = _mm512_setzero_ps();
  for (int64_t b = 0; b < dk / 32; ++b) {
    const __m512 kd = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + 2 * (b * rows + g0))));
    __m512i kt[8];
    for (int c = 0; c < 8; ++c)
      kt[c] = _mm512_xor_si512(_mm512_loadu_si512(codes + (8 * b + c) * 64), bias);
    q8_block_dots<NB>(kt, kd, hd, h0, b, dot);
  }
}

// Prefetch hint for the next page's key group i (its codes; with the first, its scales),
// when the next page holds it.
inline void prefetch_key_group(const FlashPage& t, int64_t dk, int64_t i) {
  if (!t.next_k || i >= t.n_next) return;
  const tensor::q8_tile::Shape shape = tensor::q8_tile::key_groups(t.tile_rows, dk);
  const uint8_t* codes = t.next_k + tensor::q8_tile::codes_offset(shape) + i * dk;
  for (int64_t b = 0; b < 16 * dk; b += 64) _mm_prefetch(reinterpret_cast<const char*>(codes + b), _MM_HINT_T1);
  if (i == 0) {
    for (size_t b = 0; b < tensor::q8_tile::codes_offset(shape); b += 64)
      _mm_prefetch(reinterpret_cast<const char*>(t.next_k + b), _MM_HINT_T1);
  }
}

// Steps 1–2 for q8_0 K with the integer dot, NB heads from h0, 16 keys at a time. Groups
// wholly inside [j0, j1) address their rows from the tile (the common case); the groups at
// the edges stand zero_row in for the keys outside.
template <int NB>
void scores_q8_block(const FlashShape& sh, const FlashPage& t, const FlashHeads& hd, int64_t h0,
                     float* s, int64_t sp, const uint8_t* zero_row) {
  const int64_t nb = sh.dk / 32;
  const int64_t base = t.j0 / 16 * 16;
  for (int64_t g0 = base; g0 < t.j1; g0 += 16) {
    __m512 dot[NB];
    if (t.k_tiles) {
      prefetch_key_group(t, sh.dk, g0 - base);
      q8_tile_dots<NB>(t.k, t.tile_rows, sh.dk, g0, hd, h0, dot);
    } else if (g0 >= t.j0 && g0 + 16 <= t.j1) {
      for (int p = 0; p < 16; ++p) prefetch_row(t.next_k, t.k_stride, t.next_k_bytes, g0 + p - base, t.n_next);
      const uint8_t* k0 = t.k + g0 * t.k_stride;
      const size_t stride = t.k_stride;
      q8_group_dots<NB>([&](int p) { return k0 + p * stride; }, hd, h0, nb, dot);
    } else {
      for (int p = 0; p < 16; ++p) prefetch_row(t.next_k, t.k_stride, t.next_k_bytes, g0 + p - base, t.n_next);
      const uint8_t* rows[16];
      for (int p = 0; p < 16; ++p) {
        const int64_t j = g0 + p;
        rows[p] = j >= t.j0 && j < t.j1 ? t.k + j * t.k_stride : zero_row;
      }
      q8_group_dots<NB>([&](int p) { return rows[p]; }, hd, h0, nb, dot);
    }
    const int64_t lo = std::max(t.j0, g0) - g0, hi = std::min(t.j1, g0 + 16) - g0;
    for (int h = 0; h < NB; ++h) store_scores(sh, dot[h], lo, hi, s + h * sp + g0);
  }
}

// Step 5's fma part for NB heads: acc[h][c..] += p_j · v_j over the tile's visible j (every
// page, ascending), W·16 columns per pass (accumulators are padded to 16, so a tail needs a
// masked V load only). The accumulators stay in registers across the pages.
template <DType VT, int NB, int W>
void values_pass(const FlashTile& tile, const float* p, int64_t sp, float* const* acc, int64_t c,
                 __mmask16 last) {
  __m512 a[NB][W];
  for (int h = 0; h < NB; ++h)
    for (int w = 0; w < W; ++w) a[h][w] = _mm512_loadu_ps(acc[h] + c + 16 * w);
  for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
    const FlashPage& t = tile.pages[pg];
    const float* pt = p + t.offset;
    for (int64_t j = t.j0; j < t.j1; ++j) {
      if (c == 0) prefetch_row(t.next_v, t.v_stride, t.next_v_bytes, j - t.j0, t.n_next);
      const uint8_t* row = t.v + j * t.v_stride;
      __m512 vv[W];
      if constexpr (VT == DType::kQ8_0 && W == 2) {
        load_q8_block(row, c, vv[0], vv[1]);
      } else if constexpr (VT == DType::kQ8_0) {
        vv[0] = load16<VT>(row, c);
      } else {
        for (int w = 0; w < W; ++w)
          vv[w] = w + 1 < W || last == 0xFFFF ? load16<VT>(row, c + 16 * w) : load16_tail<VT>(row, c + 16 * w, last);
      }
      for (int h = 0; h < NB; ++h) {
        const float* pj = pt + h * sp + j;
        for (int w = 0; w < W; ++w) a[h][w] = fmadd_bcast(a[h][w], vv[w], pj);
      }
    }
  }
  for (int h = 0; h < NB; ++h)
    for (int w = 0; w < W; ++w) _mm512_storeu_ps(acc[h] + c + 16 * w, a[h][w]);
}

template <DType VT, int NB>
void values_block(const FlashShape& sh, const FlashTile& t, const float* p, int64_t sp,
                  float* const* acc) {
  const int64_t dv = sh.dv;
  int64_t c = 0;
  for (; c + 32 <= dv; c += 32) values_pass<VT, NB, 2>(t, p, sp, acc, c, 0xFFFF);
  for (; c < dv; c += 16) values_pass<VT, NB, 1>(t, p, sp, acc, c, lanes_below(std::min<int64_t>(16, dv - c)));
}

void scores_q8_all(const FlashShape& sh, const FlashPage& t, const FlashHeads& hd, float* s,
                   int64_t sp, const uint8_t* zero_row) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 8) {
    float* sb = s + h0 * sp;
    switch (std::min<int64_t>(8, hd.n - h0)) {
      case 1: scores_q8_block<1>(sh, t, hd, h0, sb, sp, zero_row); break;
      case 2: scores_q8_block<2>(sh, t, hd, h0, sb, sp, zero_row); break;
      case 3: scores_q8_block<3>(sh, t, hd, h0, sb, sp, zero_row); break;
      case 4: scores_q8_block<4>(sh, t, hd, h0, sb, sp, zero_row); break;
      case 5: scores_q8_block<5>(sh, t, hd, h0, sb, sp, zero_row); break;
      case 6: scores_q8_block<6>(sh, t, hd, h0, sb, sp, zero_row); break;
      case 7: scores_q8_block<7>(sh, t, hd, h0, sb, sp, zero_row); break;
      default: scores_q8_block<8>(sh, t, hd, h0, sb, sp, zero_row); break;
    }
  }
}

template <DType KT>
void scores_all(const FlashShape& sh, const FlashPage& t, const FlashHeads& hd, float* s,
                int64_t sp, const uint8_t* zero_row) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 8) {
    const float* const* q = hd.q + h0;
    float* sb = s + h0 * sp;
    switch (std::min<int64_t>(8, hd.n - h0)) {
      case 1: scores_block<KT, 1>(sh, t, q, sb, sp, zero_row); break;
      case 2: scores_block<KT, 2>(sh, t, q, sb, sp, zero_row); break;
      case 3: scores_block<KT, 3>(sh, t, q, sb, sp, zero_row); break;
      case 4: scores_block<KT, 4>(sh, t, q, sb, sp, zero_row); break;
      case 5: scores_block<KT, 5>(sh, t, q, sb, sp, zero_row); break;
      case 6: scores_block<KT, 6>(sh, t, q, sb, sp, zero_row); break;
      case 7: scores_block<KT, 7>(sh, t, q, sb, sp, zero_row); break;
      default: scores_block<KT, 8>(sh, t, q, sb, sp, zero_row); break;
    }
  }
}

template <DType VT>
void values_all(const FlashShape& sh, const FlashTile& t, const FlashHeads& hd, const float* p,
                int64_t sp) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 8) {
    float* const* acc = hd.acc + h0;
    const float* pb = p + h0 * sp;
    switch (std::min<int64_t>(8, hd.n - h0)) {
      case 1: values_block<VT, 1>(sh, t, pb, sp, acc); break;
      case 2: values_block<VT, 2>(sh, t, pb, sp, acc); break;
      case 3: values_block<VT, 3>(sh, t, pb, sp, acc); break;
      case 4: values_block<VT, 4>(sh, t, pb, sp, acc); break;
      case 5: values_block<VT, 5>(sh, t, pb, sp, acc); break;
      case 6: values_block<VT, 6>(sh, t, pb, sp, acc); break;
      case 7: values_block<VT, 7>(sh, t, pb, sp, acc); break;
      default: values_block<VT, 8>(sh, t, pb, sp, acc); break;
    }
  }
}

// Step 5 for q8_0 pair V (attention_flash.h): the tile's weights P as int16 [head][block][sp],
// then per block of 32 elements 2 × 16 int32 sums per head, two keys per vpdpwssd.
struct PairWeights {
  std::vector<float> w;      // [nb][sp]
  std::vector<int16_t> p;    // [n heads][nb][sp]
  std::vector<float> f;      // [nb] M_b / P_max
};

// The tile's w table and factors (step 5: M_b, inv_b, w_jb, M_b / P_max); the weights P
// themselves are made in softmax_update, from each p_j as it is computed.
void pair_scales(const FlashShape& sh, const FlashTile& tile, const FlashHeads& hd, int64_t sp, PairWeights& pw) {
  const int64_t nb = sh.dv / 32;
  const int32_t p_max = pair_p_max(tile.span);
  pw.w.assign(static_cast<size_t>(nb * sp), 0.0f);
  pw.p.resize(static_cast<size_t>(hd.n * nb * sp));
  pw.f.resize(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) {
    __m512 mv = _mm512_setzero_ps();  // masked-off lanes read 0, which M_b starts from
    for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
      const FlashPage& t = tile.pages[pg];
      const uint16_t* sc = reinterpret_cast<const uint16_t*>(t.v) + b * t.tile_rows;
      for (int64_t j = t.j0; j < t.j1; j += 16) {
        const __mmask16 m = lanes_below(std::min<int64_t>(16, t.j1 - j));
        mv = _mm512_max_ps(mv, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, sc + j)));
      }
    }
    const float m_b = reduce_max(mv);
    const float inv = m_b > 0.0f ? static_cast<float>(p_max) / m_b : 0.0f;
    pw.f[b] = m_b / static_cast<float>(p_max);
    const __m512 iv = _mm512_set1_ps(inv);
    for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
      const FlashPage& t = tile.pages[pg];
      const uint16_t* sc = reinterpret_cast<const uint16_t*>(t.v) + b * t.tile_rows;
      float* w = pw.w.data() + b * sp + t.offset;
      for (int64_t j = t.j0; j < t.j1; j += 16) {
        const __mmask16 m = lanes_below(std::min<int64_t>(16, t.j1 - j));
        _mm512_mask_storeu_ps(w + j, m, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, sc + j)), iv));
      }
    }
  }
}

template <int NB>
void values_pairs_block(const FlashShape& sh, const FlashTile& tile, const PairWeights& pw, int64_t h0,
                        int64_t sp, float* const* acc) {
  const int64_t dv = sh.dv, nb = dv / 32;
  for (int64_t b = 0; b < nb; ++b) {
    __m512i a[NB][2];
    for (int h = 0; h < NB; ++h) a[h][0] = a[h][1] = _mm512_setzero_si512();
    const int16_t* pb[NB];
    for (int h = 0; h < NB; ++h) pb[h] = pw.p.data() + ((h0 + h) * nb + b) * sp;
    for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
      const FlashPage& t = tile.pages[pg];
      const uint8_t* codes = t.v + tensor::q8_tile::codes_offset(tensor::q8_tile::value_pairs(t.tile_rows, dv)) + 64 * b;
      for (int64_t jp = t.j0 / 2; jp < (t.j1 + 1) / 2; ++jp) {
        const uint8_t* c = codes + jp * 2 * dv;
        const __m512i v0 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c)));
        const __m512i v1 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 32)));
        const int64_t pos = t.offset + 2 * jp;
        for (int h = 0; h < NB; ++h) {
          a[h][0] = dpwssd_bcast(a[h][0], v0, pb[h] + pos);
          a[h][1] = dpwssd_bcast(a[h][1], v1, pb[h] + pos);
        }
      }
    }
    const __m512 f = _mm512_set1_ps(pw.f[b]);
    for (int h = 0; h < NB; ++h) {
      float* o = acc[h] + 32 * b;
      _mm512_storeu_ps(o, _mm512_fmadd_ps(f, _mm512_cvtepi32_ps(a[h][0]), _mm512_loadu_ps(o)));
      _mm512_storeu_ps(o + 16, _mm512_fmadd_ps(f, _mm512_cvtepi32_ps(a[h][1]), _mm512_loadu_ps(o + 16)));
    }
  }
}

// The integer p·v of a tile whose weights P softmax_update made.
void values_pairs(const FlashShape& sh, const FlashTile& tile, const FlashHeads& hd, const PairWeights& pw,
                  int64_t sp) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 8) {
    float* const* acc = hd.acc + h0;
    switch (std::min<int64_t>(8, hd.n - h0)) {
      case 1: values_pairs_block<1>(sh, tile, pw, h0, sp, acc); break;
      case 2: values_pairs_block<2>(sh, tile, pw, h0, sp, acc); break;
      case 3: values_pairs_block<3>(sh, tile, pw, h0, sp, acc); break;
      case 4: values_pairs_block<4>(sh, tile, pw, h0, sp, acc); break;
      case 5: values_pairs_block<5>(sh, tile, pw, h0, sp, acc); break;
      case 6: values_pairs_block<6>(sh, tile, pw, h0, sp, acc); break;
      case 7: values_pairs_block<7>(sh, tile, pw, h0, sp, acc); break;
      default: values_pairs_block<8>(sh, tile, pw, h0, sp, acc); break;
    }
  }
}

// Steps 3–4 and the rescale of step 5 for every head. With `pairs` (q8_0 pair V) each p_j
// goes straight into the weights P, and the scores keep the tile's s_j.
void softmax_update(const FlashShape& sh, const FlashHeads& hd, float* s, int64_t sp, PairWeights* pairs) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 16) {
    const int64_t nb = std::min<int64_t>(16, hd.n - h0);
    // The rescale factors c of up to 16 heads in one exp_defined_x16 (each lane gives the
    // scalar exp_defined's bits); unused lanes compute exp(0).
    alignas(64) float m_old[16] = {}, m_new[16] = {}, c[16];
    for (int64_t h = 0; h < nb; ++h) {
      const float* sh_s = s + (h0 + h) * sp;
      __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
      for (int64_t j = 0; j < sp; j += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(sh_s + j));
      m_old[h] = hd.m[h0 + h];
      m_new[h] = max_def(m_old[h], reduce_max(mx));
    }
    _mm512_store_ps(c, exp_defined_x16(_mm512_sub_ps(_mm512_load_ps(m_old), _mm512_load_ps(m_new))));
    for (int64_t h = 0; h < nb; ++h) {
      float* sh_s = s + (h0 + h) * sp;
      const __m512 mv = _mm512_set1_ps(m_new[h]), cv = _mm512_set1_ps(c[h]);
      float* l_h = hd.l[h0 + h];
      __m512 l = _mm512_mul_ps(_mm512_loadu_ps(l_h), cv);
      if (pairs) {
        // P = round-half-even(p · w) per block (vcvtps2dq under the default MXCSR), into
        // the head's rows of the weights; the pointers held in registers across the loop.
        const int64_t nb = sh.dv / 32;
        int16_t* const p_out = pairs->p.data() + (h0 + h) * nb * sp;
        const float* const w = pairs->w.data();
        for (int64_t j = 0; j < sp; j += 16) {
          const __m512 pj = exp_defined_x16(_mm512_sub_ps(_mm512_loadu_ps(sh_s + j), mv));
          for (int64_t b = 0; b < nb; ++b) {
            const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(pj, _mm512_loadu_ps(w + b * sp + j)));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(p_out + b * sp + j), _mm512_cvtepi32_epi16(q));
          }
          l = _mm512_add_ps(l, pj);
        }
      } else {
        for (int64_t j = 0; j < sp; j += 16) {
          const __m512 pj = exp_defined_x16(_mm512_sub_ps(_mm512_loadu_ps(sh_s + j), mv));
          _mm512_storeu_ps(sh_s + j, pj);
          l = _mm512_add_ps(l, pj);
        }
      }
      _mm512_storeu_ps(l_h, l);
      hd.m[h0 + h] = m_new[h];
      if (c[h] != 1.0f) {
        float* acc = hd.acc[h0 + h];
        for (int64_t d = 0; d < sh.dv; d += 16)
          _mm512_storeu_ps(acc + d, _mm512_mul_ps(_mm512_loadu_ps(acc + d), cv));
      }
    }
  }
}

// r[0, 16) ← its transpose (16 × 16 floats).
inline void transpose16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int h = 0; h < 2; ++h) {
    for (int m = 0; m < 4; ++m) {
      t[8 * h + m] = _mm512_shuffle_f32x4(r[8 * h + m], r[8 * h + 4 + m], 0x88);
      t[8 * h + 4 + m] = _mm512_shuffle_f32x4(r[8 * h + m], r[8 * h + 4 + m], 0xDD);
    }
  }
  for (int m = 0; m < 8; ++m) {
    r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);
    r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xDD);
  }
}

template <DType T>
void k_major_group(const uint8_t* const* rows, int64_t dk, float* out) {
  for (int64_t c = 0; c < dk; c += 16) {
    __m512 r[16];
    for (int j = 0; j < 16; ++j) r[j] = rows[j] ? load16<T>(rows[j], c) : _mm512_setzero_ps();
    transpose16(r);
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(out + 16 * (c + i), r[i]);
  }
}

}  // namespace

void k_major_group_avx512(DType type, const uint8_t* const* rows, int64_t dk, float* out) {
  switch (type) {
    case DType::kF32: k_major_group<DType::kF32>(rows, dk, out); break;
    case DType::kF16: k_major_group<DType::kF16>(rows, dk, out); break;
    case DType::kBF16: k_major_group<DType::kBF16>(rows, dk, out); break;
    default: throw Error(ErrorCode::kInternal, "flash attention: element-major K of an unsupported type");
  }
}

void flash_combine_heads_avx512(float* m_a, float* l_a, float* acc_a, const float* m_b,
                                const float* l_b, const float* acc_b, int64_t n, int64_t dv16) {
  for (int64_t h0 = 0; h0 < n; h0 += 16) {
    const int64_t nb = std::min<int64_t>(16, n - h0);
    const __mmask16 lanes = lanes_below(nb);
    const __m512 ma = _mm512_maskz_loadu_ps(lanes, m_a + h0), mb = _mm512_maskz_loadu_ps(lanes, m_b + h0);
    // m = max_def(m_a, m_b) = m_a > m_b ? m_a : m_b (vmaxps returns its second operand
    // unless the first is greater, so the order of the operands matters for NaN).
    const __m512 m = _mm512_max_ps(ma, mb);
    alignas(64) float ca[16], cb[16];
    _mm512_store_ps(ca, exp_defined_x16(_mm512_sub_ps(ma, m)));
    _mm512_store_ps(cb, exp_defined_x16(_mm512_sub_ps(mb, m)));
    _mm512_mask_storeu_ps(m_a + h0, lanes, m);
    for (int64_t h = 0; h < nb; ++h) {
      const __m512 va = _mm512_set1_ps(ca[h]), vb = _mm512_set1_ps(cb[h]);
      auto fold = [&](float* a, const float* b) {
        _mm512_storeu_ps(a, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(a), va),
                                          _mm512_mul_ps(_mm512_loadu_ps(b), vb)));
      };
      const int64_t g = h0 + h;
      fold(l_a + 16 * g, l_b + 16 * g);
      for (int64_t d = 0; d < dv16; d += 16) fold(acc_a + dv16 * g + d, acc_b + dv16 * g + d);
    }
  }
}

void flash_tile_avx512(const FlashShape& sh, const FlashTile& tile, const FlashHeads& hd,
                       float* scores) {
  const int64_t sp = pad16(tile.span);
  // Positions no page writes must read as −inf. When the pages cover the whole span (every
  // segment but a context's last), only the padding past it does: filling all of the
  // scores first cost ~1.4% of decode attention at depth (8 KiB of stores a tile).
  int64_t covered = 0;
  for (int64_t pg = 0; pg < tile.n_pages; ++pg) covered += tile.pages[pg].j1 - tile.pages[pg].j0;
  const float minus_inf = -std::numeric_limits<float>::infinity();
  if (covered == tile.span) {
    for (int64_t h = 0; h < hd.n; ++h) std::fill(scores + h * sp + tile.span, scores + (h + 1) * sp, minus_inf);
  } else {
    std::fill(scores, scores + hd.n * sp, minus_inf);
  }
  thread_local std::vector<uint8_t> zero_row;
  if (zero_row.size() < static_cast<size_t>(4 * sh.dk)) zero_row.assign(static_cast<size_t>(4 * sh.dk), 0);
  for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
    const FlashPage& t = tile.pages[pg];
    float* s = scores + t.offset;
    if (t.k_major && sh.dk % 16 == 0) {
      scores_major_all(sh, t, hd, s, sp);
      continue;
    }
    switch (t.k_type) {
      case DType::kF32: scores_all<DType::kF32>(sh, t, hd, s, sp, zero_row.data()); break;
      case DType::kF16: scores_all<DType::kF16>(sh, t, hd, s, sp, zero_row.data()); break;
      case DType::kBF16: scores_all<DType::kBF16>(sh, t, hd, s, sp, zero_row.data()); break;
      default: scores_q8_all(sh, t, hd, s, sp, zero_row.data()); break;
    }
  }
  thread_local PairWeights pw;
  const bool pairs = tile.n_pages > 0 && tile.pages[0].v_pairs;
  if (pairs) pair_scales(sh, tile, hd, sp, pw);
  softmax_update(sh, hd, scores, sp, pairs ? &pw : nullptr);
  if (tile.n_pages == 0) return;
  if (pairs) {
    values_pairs(sh, tile, hd, pw, sp);
    return;
  }
  switch (tile.pages[0].v_type) {  // one type for every page (the driver widens all or none)
    case DType::kF32: values_all<DType::kF32>(sh, tile, hd, scores, sp); break;
    case DType::kF16: values_all<DType::kF16>(sh, tile, hd, scores, sp); break;
    case DType::kBF16: values_all<DType::kBF16>(sh, tile, hd, scores, sp); break;
    default: values_all<DType::kQ8_0>(sh, tile, hd, scores, sp); break;
  }
}

}  // namespace keel::kernels::detail

#pragma GCC diagnostic pop
#pragma GCC pop_options
