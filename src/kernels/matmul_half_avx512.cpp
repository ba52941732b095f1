// AVX-512 implementation of matmul_half_range (matmul_half.h, matmul_half_internal.h).
//
// One zmm carries two 8-lane partial-sum vectors: lanes 0-7 belong to weight row a, lanes
// 8-15 to row b, and lane j of each is the reference's sum s_j (elements k = j mod 8,
// ascending, fused multiply-add). Every output element thus goes through dot_f32's exact
// operations; only more of them run at once.
//
// Decode (1-7 activation rows): the weights stream from memory once. A tile is 8 rows (4
// pairs, 4 independent add chains per activation row); while it is summed, the next tile's
// rows are prefetched into L2 at the same column, because each row is its own 4-11 KB
// stream and the hardware prefetcher restarts at every page (measured one thread, 64 MiB
// of f16 weights from DRAM on a loaded machine: 16 GB/s without, 23-24 GB/s with).
// 8 to kScratchMinRows - 1 activation rows (parallel decodes): wide_range below, where the
// zmm halves are two activation rows instead.
// Prefill (kScratchMinRows or more activation rows): each 16-row block is widened once into
// an f32 scratch laid out [group of 4 pairs][step][pair][16 lanes], and every tile of 4
// activation rows reuses it: 16 zmm sums (8 weight rows x 4 activation rows) per step, for
// 4 weight loads and 4 activation broadcasts. Measured 80-88 GFLOPS per core against the
// 115 of mul+add when the definition was mul then add (FMA since: +12% at 512 rows on 2
// threads); the broadcasts' shuffles are most of the gap (activations pre-duplicated
// gained ~10% at 64 rows but lost at 512 for want of cache; 8x3, 8x2 and 4x6 tiles and
// blocking the reduction for L1 measured no better).
#include <immintrin.h>

// GCC 12 reports the _mm512_undefined_* inside its own conversion intrinsics as
// maybe-uninitialized; the warning is about the header, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/matmul_half_internal.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// Only the fused multiply-adds written out; a contracted combine would change the bits.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels::half {
namespace {

constexpr int kPairs = 4;                    // weight-row pairs per tile: 8 rows
constexpr int kTileRows = 2 * kPairs;
constexpr int kBatch = 4;                    // activation rows per tile
constexpr int64_t kBlockRows = 16;           // weight rows widened into the scratch at once
constexpr int kGroups = kBlockRows / kTileRows;
constexpr int64_t kScratchMinRows = 40;      // from here the widened-block scratch beats wide tiles
constexpr int64_t kWideMinRows = 8;          // from here activation-row pairs share widenings (wide_range)

// Elements [k, k+8) of rows a and b (pointers at k), widened exactly: lanes 0-7 a, 8-15 b.
template <bool kBf16>
inline __m512 widen_pair(const uint8_t* a, const uint8_t* b) {
  const __m256i h = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  if constexpr (kBf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

// x[0..8) in lanes 0-7 and again in 8-15 (vbroadcastf64x4: AVX-512F, unlike f32x8).
inline __m512 broadcast8(const float* x) {
  return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_loadu_pd(reinterpret_cast<const double*>(x))));
}

inline __m256 lanes_lo(__m512 v) { return _mm512_castps512_ps256(v); }
inline __m256 lanes_hi(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), as dot_f32 combines its sums.
inline float combine8(__m256 s) {
  const __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));  // s_j + s_{j+4}
  const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));                                  // t0 + t2, t1 + t3
  return _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
}

// The weight rows of one tile (`width` of them, at most kTileRows): row[i] is output
// o0 + i for i < n_valid; the rest repeat a valid row so the full-width code can run (their
// sums are dropped).
struct TileRows {
  const uint8_t* row[kTileRows];
  int64_t o0;
  int n_valid;
};

TileRows tile_rows(const WeightMatrix& w, int64_t o0, int64_t o_end, int width = kTileRows) {
  TileRows t;
  t.o0 = o0;
  t.n_valid = static_cast<int>(std::min<int64_t>(width, o_end - o0));
  for (int i = 0; i < kTileRows; ++i) t.row[i] = w.row(o0 + std::min(i, t.n_valid - 1));
  return t;
}

// acc[p][b] += pair p's weights * activation row b, one 8-element step at a time in
// ascending order. weights(p, s) gives pair p's widened step s; before(s) runs first.
template <int B, class Weights, class Before>
inline void accumulate(const Weights& weights, const Before& before, const float* const* xr, int64_t steps,
                       __m512 (&acc)[kPairs][B]) {
  for (int64_t s = 0; s < steps; ++s) {
    before(s);
    __m512 xv[B];
    for (int b = 0; b < B; ++b) xv[b] = broadcast8(xr[b] + 8 * s);
    for (int p = 0; p < kPairs; ++p) {
      const __m512 wv = weights(p, s);
      for (int b = 0; b < B; ++b) acc[p][b] = _mm512_fmadd_ps(wv, xv[b], acc[p][b]);
    }
  }
}

// Combines each 8-lane half as dot_f32 does, adds the tail, stores y[r0 + b][o0 + i].
template <bool kBf16, int B>
inline void finish(const TileRows& t, const float* const* xr, int64_t r0, int64_t n8, int64_t n, float* y,
                   int64_t n_out, const __m512 (&acc)[kPairs][B]) {
  for (int p = 0; p < kPairs; ++p) {
    for (int h = 0; h < 2; ++h) {
      const int i = 2 * p + h;
      if (i >= t.n_valid) continue;
      for (int b = 0; b < B; ++b) {
        float sum = combine8(h ? lanes_hi(acc[p][b]) : lanes_lo(acc[p][b]));
        if (n8 < n) sum = add_tail(sum, t.row[i], kBf16, xr[b], n8, n);
        y[(r0 + b) * n_out + t.o0 + i] = sum;
      }
    }
  }
}

// One tile x activation rows [r0, r0 + B): weights(p, s) gives pair p's widened step s,
// before(s) runs ahead of each step.
template <bool kBf16, int B, class Weights, class Before>
inline void run_tile(const WeightMatrix& w, const TileRows& t, const float* x, int64_t r0, float* y,
                     const Weights& weights, const Before& before) {
  const int64_t n = w.n_in, n8 = n / 8 * 8;
  const float* xr[B];
  for (int b = 0; b < B; ++b) xr[b] = x + (r0 + b) * n;
  __m512 acc[kPairs][B];
  for (auto& a : acc)
    for (auto& v : a) v = _mm512_setzero_ps();
  accumulate<B>(weights, before, xr, n8 / 8, acc);
  finish<kBf16, B>(t, xr, r0, n8, n, y, w.n_out, acc);
}

// Step s's share of prefetching R f16/bf16 rows `next` into L2 at the column a tile is
// reading. A row moves 16 bytes a step, so each row needs one 64-byte line every 4 steps: a
// quarter of the rows per step, in turn, spreads the requests evenly. Into L2 (T1): into L1
// (T0) a whole tile ahead evicts what is being read, and measured slower.
template <int R = kTileRows>
inline void prefetch_step(const uint8_t* const* next, int64_t s) {
  const int64_t column = 16 * (s & ~int64_t{3});
  for (int i = static_cast<int>(s & 3); i < R; i += 4) {
    _mm_prefetch(reinterpret_cast<const char*>(next[i] + column), _MM_HINT_T1);
  }
}

// Widening the weights as they stream in; `next` (kTileRows rows, or null) is prefetched
// at the column being read.
template <bool kBf16, int B>
void direct_tile(const WeightMatrix& w, const TileRows& t, const uint8_t* const* next, const float* x,
                 int64_t r0, float* y) {
  const auto weights = [&t](int p, int64_t s) {
    return widen_pair<kBf16>(t.row[2 * p] + 16 * s, t.row[2 * p + 1] + 16 * s);
  };
  if (next == nullptr) {
    run_tile<kBf16, B>(w, t, x, r0, y, weights, [](int64_t) {});
    return;
  }
  run_tile<kBf16, B>(w, t, x, r0, y, weights, [next](int64_t s) { prefetch_step(next, s); });
}

// Weights already widened in `ws` ([step][pair][16]); `next` (kTileRows rows, or null) is
// prefetched as in direct_tile.
template <bool kBf16, int B>
void scratch_tile(const WeightMatrix& w, const TileRows& t, const float* ws, const uint8_t* const* next,
                  const float* x, int64_t r0, float* y) {
  const auto weights = [ws](int p, int64_t s) { return _mm512_load_ps(ws + (s * kPairs + p) * 16); };
  if (next == nullptr) {
    run_tile<kBf16, B>(w, t, x, r0, y, weights, [](int64_t) {});
    return;
  }
  run_tile<kBf16, B>(w, t, x, r0, y, weights, [next](int64_t s) { prefetch_step(next, s); });
}

// Activation rows [r0, r0 + B) against every group of the block; group g prefetches
// next[g] (null: nothing).
template <bool kBf16, int B>
void scratch_tiles(const WeightMatrix& w, const TileRows* t, int n_groups, const float* ws, int64_t group_floats,
                   const uint8_t* const (*next)[kTileRows], const float* x, int64_t r0, float* y) {
  for (int g = 0; g < n_groups; ++g) {
    scratch_tile<kBf16, B>(w, t[g], ws + g * group_floats, next ? next[g] : nullptr, x, r0, y);
  }
}

template <bool kBf16>
void direct_range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  for (int64_t o = ob; o < oe; o += kTileRows) {
    const TileRows t = tile_rows(w, o, oe);
    const uint8_t* next[kTileRows];
    const bool has_next = o + kTileRows < oe;
    for (int i = 0; has_next && i < kTileRows; ++i) next[i] = w.row(std::min(o + kTileRows + i, oe - 1));
    int64_t r = 0;
    // Prefetching the next tile pays once: the first activation-row tile streams it.
    for (; r + kBatch <= n_rows; r += kBatch) direct_tile<kBf16, kBatch>(w, t, has_next && r == 0 ? next : nullptr, x, r, y);
    const uint8_t* const* pf = has_next && r == 0 ? next : nullptr;
    switch (n_rows - r) {
      case 3: direct_tile<kBf16, 3>(w, t, pf, x, r, y); break;
      case 2: direct_tile<kBf16, 2>(w, t, pf, x, r, y); break;
      case 1: direct_tile<kBf16, 1>(w, t, pf, x, r, y); break;
      default: break;
    }
  }
}

// Several activation rows (kWideMinRows to kScratchMinRows - 1: the decode step of 8 or
// more sequences). Here the zmm halves are two ACTIVATION rows: the rows are interleaved by pairs
// once per call into xi ([chunk of up to 4 pairs][step][pair][16]: x_2q[8s, 8s+8) then
// x_2q+1[8s, 8s+8)), and each weight step is widened once into both halves and used for
// every pair of the chunk. A tile is 4 weight rows x 4 pairs (16 sums); per step that is 4
// widenings and 4 plain loads for 16 multiply-adds, where the weight-pair layout needs a
// broadcast per activation row, and the scratch path's store and reload of each widened
// block cost more than the arithmetic at these row counts (perf: 29% of an 8-row step).
// Measured one thread, hot (BM_QMatmul/1/2048/5632/R/1/0): 8 rows 52 -> 61-65 GFLOPS; 16,
// 24, 32 rows 65-68 -> 70-71; at 40-56 rows the two paths are within noise, at 64 the
// scratch path leads (77 vs 70). The widening is what is left: the 16 mul + 16 add of a
// step took 16 cycles, its 4 widenings 6 more (microbenchmark, data in L1); with the fused
// form the adds' pipes are free for the widenings (8 rows, 2 threads: 200 -> 240 GOPS).
constexpr int kWideRows = 4;   // weight rows per wide tile
constexpr int kWidePairs = 4;  // activation-row pairs per chunk

// Elements [k, k+8) of one row (pointer at k), widened exactly into both 8-lane halves.
// Widened at 256 bits and then copied up: on Zen 4 a 512-bit vcvtph2ps takes the add pipes
// twice as long, and this measured 9% faster in the 4 x 4 tile.
template <bool kBf16>
inline __m512 widen_dup(const uint8_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m256 v;
  if constexpr (kBf16) {
    v = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    v = _mm256_cvtph_ps(h);
  }
  const __m512d d = _mm512_castpd256_pd512(_mm256_castps_pd(v));
  return _mm512_castpd_ps(_mm512_insertf64x4(d, _mm256_castps_pd(v), 1));
}

// Activation rows [r0, r0 + n) (n <= 2 * kWidePairs) as one chunk of xi: [step][pair][16];
// the half after an odd last row is zero (its sums are dropped).
void interleave_chunk(const float* x, int64_t n_in, int64_t r0, int64_t n, float* xi) {
  const int64_t steps = n_in / 8, pairs = (n + 1) / 2;
  for (int64_t q = 0; q < pairs; ++q) {
    const float* a = x + (r0 + 2 * q) * n_in;
    const float* b = 2 * q + 1 < n ? a + n_in : nullptr;
    for (int64_t s = 0; s < steps; ++s) {
      const __m256 hi = b ? _mm256_loadu_ps(b + 8 * s) : _mm256_setzero_ps();
      const __m512d v = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(a + 8 * s))),
                                           _mm256_castps_pd(hi), 1);
      _mm512_store_ps(xi + (s * pairs + q) * 16, _mm512_castpd_ps(v));
    }
  }
}

// Tile rows t (kWideRows, t.n_valid real) x the Q pairs of chunk xi (activation rows
// [r0, r0 + n)); `next` (kWideRows rows, or null) is prefetched at the column being read.
template <bool kBf16, int Q>
void wide_tile(const WeightMatrix& w, const TileRows& t, const uint8_t* const* next, const float* xi,
               const float* x, int64_t r0, int64_t n, float* y) {
  constexpr int P = kWideRows;
  const int64_t n_in = w.n_in, n8 = n_in / 8 * 8, steps = n_in / 8;
  __m512 acc[P][Q];
  for (auto& a : acc)
    for (auto& v : a) v = _mm512_setzero_ps();
  for (int64_t s = 0; s < steps; ++s) {
    if (next) prefetch_step<P>(next, s);
    __m512 xv[Q];
    for (int q = 0; q < Q; ++q) xv[q] = _mm512_load_ps(xi + (s * Q + q) * 16);
    for (int p = 0; p < P; ++p) {
      const __m512 wv = widen_dup<kBf16>(t.row[p] + 16 * s);
      for (int q = 0; q < Q; ++q) acc[p][q] = _mm512_fmadd_ps(wv, xv[q], acc[p][q]);
    }
  }
  for (int p = 0; p < t.n_valid; ++p) {
    for (int q = 0; q < Q; ++q) {
      for (int h = 0; h < 2 && 2 * q + h < n; ++h) {
        const int64_t r = r0 + 2 * q + h;
        float sum = combine8(h ? lanes_hi(acc[p][q]) : lanes_lo(acc[p][q]));
        if (n8 < n_in) sum = add_tail(sum, t.row[p], kBf16, x + r * n_in, n8, n_in);
        y[r * w.n_out + t.o0 + p] = sum;
      }
    }
  }
}

template <bool kBf16>
void wide_range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  constexpr int R = kWideRows, kChunkRows = 2 * kWidePairs;
  const int64_t steps = w.n_in / 8, chunk_floats = steps * kWidePairs * 16;
  const int64_t n_chunks = (n_rows + kChunkRows - 1) / kChunkRows;
  float* xi = scratch_floats(static_cast<size_t>(n_chunks * chunk_floats));
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int64_t r0 = c * kChunkRows;
    interleave_chunk(x, w.n_in, r0, std::min<int64_t>(kChunkRows, n_rows - r0), xi + c * chunk_floats);
  }
  for (int64_t o = ob; o < oe; o += R) {
    const TileRows t = tile_rows(w, o, oe, R);
    const uint8_t* next[R];
    const bool has_next = o + R < oe;
    for (int i = 0; has_next && i < R; ++i) next[i] = w.row(std::min(o + R + i, oe - 1));
    for (int64_t c = 0; c < n_chunks; ++c) {
      // Prefetching the next tile pays once: the first chunk streams it.
      const uint8_t* const* pf = has_next && c == 0 ? next : nullptr;
      const int64_t r0 = c * kChunkRows, n = std::min<int64_t>(kChunkRows, n_rows - r0);
      const float* xc = xi + c * chunk_floats;
      switch ((n + 1) / 2) {
        case 1: wide_tile<kBf16, 1>(w, t, pf, xc, x, r0, n, y); break;
        case 2: wide_tile<kBf16, 2>(w, t, pf, xc, x, r0, n, y); break;
        case 3: wide_tile<kBf16, 3>(w, t, pf, xc, x, r0, n, y); break;
        default: wide_tile<kBf16, kWidePairs>(w, t, pf, xc, x, r0, n, y); break;
      }
    }
  }
}

// Widens each 16-row block once, then runs every activation-row tile over it. (Blocking
// the reduction for L1 as well measured slower here: the widened block streams from L2
// fast enough, and the sums' round trips cost more.)
template <bool kBf16>
void scratch_range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  const int64_t steps = w.n_in / 8;
  const int64_t group_floats = steps * kPairs * 16;  // [step][pair][16]
  float* ws = scratch_floats(static_cast<size_t>(kGroups * group_floats));
  for (int64_t o = ob; o < oe; o += kBlockRows) {
    TileRows t[kGroups];
    int n_groups = 0;
    for (; n_groups < kGroups && o + n_groups * kTileRows < oe; ++n_groups) {
      const TileRows& g = t[n_groups] = tile_rows(w, o + n_groups * kTileRows, oe);
      float* wg = ws + n_groups * group_floats;
      for (int64_t s = 0; s < steps; ++s) {
        for (int p = 0; p < kPairs; ++p) {
          _mm512_store_ps(wg + (s * kPairs + p) * 16, widen_pair<kBf16>(g.row[2 * p] + 16 * s, g.row[2 * p + 1] + 16 * s));
        }
      }
    }
    // The next block's rows are asked for while the first activation-row tile runs over
    // this one, so a few-row step (8 parallel decodes) overlaps its weight reads with the
    // arithmetic instead of widening from DRAM and then computing.
    const uint8_t* next[kGroups][kTileRows];
    const int64_t o_next = o + kBlockRows;
    for (int g = 0; g < kGroups; ++g) {
      for (int i = 0; i < kTileRows; ++i) next[g][i] = w.row(std::min(o_next + g * kTileRows + i, oe - 1));
    }
    const uint8_t* const (*pf)[kTileRows] = o_next < oe ? next : nullptr;
    int64_t r = 0;
    for (; r + kBatch <= n_rows; r += kBatch) {
      scratch_tiles<kBf16, kBatch>(w, t, n_groups, ws, group_floats, r == 0 ? pf : nullptr, x, r, y);
    }
    if (r > 0) pf = nullptr;
    switch (n_rows - r) {
      case 3: scratch_tiles<kBf16, 3>(w, t, n_groups, ws, group_floats, pf, x, r, y); break;
      case 2: scratch_tiles<kBf16, 2>(w, t, n_groups, ws, group_floats, pf, x, r, y); break;
      case 1: scratch_tiles<kBf16, 1>(w, t, n_groups, ws, group_floats, pf, x, r, y); break;
      default: break;
    }
  }
}

template <bool kBf16>
void range(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t ob, int64_t oe) {
  if (n_rows >= kScratchMinRows) {
    scratch_range<kBf16>(w, x, n_rows, y, ob, oe);
  } else if (n_rows >= kWideMinRows) {
    wide_range<kBf16>(w, x, n_rows, y, ob, oe);
  } else {
    direct_range<kBf16>(w, x, n_rows, y, ob, oe);
  }
}

}  // namespace

template <bool kBf16>
void range_avx512(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, int64_t o_begin, int64_t o_end) {
  range<kBf16>(w, x, n_rows, y, o_begin, o_end);
}
template void range_avx512<false>(const WeightMatrix&, const float*, int64_t, float*, int64_t, int64_t);
template void range_avx512<true>(const WeightMatrix&, const float*, int64_t, float*, int64_t, int64_t);

}  // namespace keel::kernels::half

#pragma GCC pop_options
#pragma GCC diagnostic pop
