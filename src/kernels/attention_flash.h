// Flash attention tile kernels (internal to src/kernels). The arithmetic is defined once,
// here, and implemented three times with the same bits: a scalar twin (the oracle), AVX2
// and AVX-512. attention_flash.cpp drives them over the segments of a row's key range.
//
// Definition, for each query head (its own online-softmax state m, L[16], acc[dv]; start
// m = −inf, L = 0, acc = 0) and each tile in ascending position order. A tile is a segment:
// the positions [tile_lo, tile_lo + 8 · page_tokens), tile_lo an absolute multiple of
// 8 · page_tokens, clipped to the row's visible keys and to the pages the view holds;
// j = position − tile_lo, lane(j) = j mod 16, so lanes follow ABSOLUTE positions:
//   1. dot(q, k): 16 partial sums, element i accumulated into sum i mod 16 by fma in
//      ascending i (k is the exact f32 value of the stored element, as
//      tensor::dequantize_row gives it), then combined by tree16_sum:
//        t[l] = a[l] + a[l+8] (l<8); u[l] = t[l] + t[l+4] (l<4); w[l] = u[l] + u[l+2];
//        dot = w[0] + w[1]
//      For q8_0 K the dot is integer, as the q8_0 matmul (qmatmul.h) defines it: q is
//      quantized per block of 32 (q::quantize_block_q8: qd_b, qq[32]); for each block b,
//      ascending, isum = Σ qq·kq (exact), dot = fma(qd_b · kd_b, float(isum), dot), from
//      dot = +0 (kd_b the block's f16 scale as f32). As in llama.cpp, where q is converted
//      to K's dot type.
//   2. s_j = dot · scale; if softcap > 0: s_j = softcap · tanh(s_j / softcap) (std::tanh).
//      Invisible j of the tile (positions not visible or not held, and padding up to a
//      multiple of 16) get s_j = −inf.
//   3. tile max: mx[lane(j)] = max_def(mx[lane(j)], s_j) over j ascending (mx = −inf),
//      then tree16_max (the tree of 1. with max_def(a, b) = a > b ? a : b, which is what
//      vmaxps computes); m' = max_def(m, tile max); c = exp_defined(m − m').
//   4. p_j = exp_defined(s_j − m') (0 for invisible j); L[l] = L[l] · c, then
//      L[lane(j)] = L[lane(j)] + p_j, 16 j at a time, ascending.
//   5. acc[d] = acc[d] · c (skipped when c == 1, which changes no bit), then for visible j
//      ascending: acc[d] = fma(p_j, v_j[d], acc[d]).
//      For V in q8_0 pair tiles (FlashPage::v_pairs; the KV cache's q8_0 V) the sum is
//      integer instead, as llama.cpp's quantized dots are: for each V block b (elements
//      [32b, 32b + 32)), with vd_jb the f16 scale of row j's block as f32 and c_j[d] its code,
//        M_b = max_def over the tile's visible j of vd_jb, from M_b = 0;
//        P_max = pair_p_max(span); inv_b = M_b > 0 ? float(P_max) / M_b : 0;
//        w_jb = vd_jb · inv_b for visible j, 0 for every other position of the tile;
//      then per head P_jb = round-half-even(p_j · w_jb) (an integer in [0, P_max]),
//        isum[d] = Σ_j P_jb(d) · c_j[d] (exact in int32: P_max bounds it),
//        acc[d] = fma(M_b / float(P_max), float(isum[d]), acc[d]).
//      The weights keep 15 bits relative to the tile's largest V scale, far below the
//      error of the codes themselves; the SIMD forms run two keys per 32-bit lane
//      (vpdpwssd / vpmaddwd) on codes the pair tile stores side by side.
// Each tile runs from a fresh state; the tiles' states are then folded in ascending order
// (flash_combine): m = max_def(m_a, m_b), ca = exp_defined(m_a − m), cb = exp_defined(m_b − m),
// L = L_a · ca + L_b · cb, acc = acc_a · ca + acc_b · cb. So a long key range can be split
// across threads (decode at depth) with the same bits as one thread walking it. Tiles
// without a held page are skipped. (Tiles were single pages until 2026-12-07; each one cost
// a max, a rescale and an accumulator reload per 32 keys. See docs/PERFORMANCE.md.)
// After the last tile (flash_finish): l = tree16_sum(L); with a sink logit s:
// m_f = max_def(m, s), c = exp_defined(m − m_f), l = l · c + exp_defined(s − m_f),
// acc = acc · c; then out[d] = acc[d] · (1 / l).
//
// Nothing depends on which query rows or heads are processed together, how many rows a
// batch has, or which thread runs a head: results are batch- and thread-invariant, and
// the three implementations agree bitwise (tested on odd sizes).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "tensor/types.h"

namespace keel::kernels::detail {

// Rounds n up to a multiple of 16 (the lane count of the definition).
inline int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

inline float max_def(float a, float b) { return a > b ? a : b; }

// One page's part of a tile, for one kv head. Row j (0 <= j < page_tokens) of K starts at
// k + j * k_stride and holds head_dim_k elements of k_type; rows [j0, j1) are visible, and
// row j is the tile's index offset + j. The kernels read kF32, kF16, kBF16 and kQ8_0 (q8_0
// only when the head dimension is a multiple of 32); the driver widens other types to f32
// first. Not owned.
struct FlashPage {
  tensor::DType k_type = tensor::DType::kF32, v_type = tensor::DType::kF32;
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  size_t k_stride = 0, v_stride = 0;
  // K / V as q8_0 tiles (tensor/q8_tile.h) of tile_rows rows at k / v (the stride unused):
  // k_tiles = key_groups (tile_rows a multiple of 16), v_pairs = value_pairs (tile_rows
  // even). Every page of a tile has the same layout.
  bool k_tiles = false, v_pairs = false;
  int64_t tile_rows = 0;
  int64_t offset = 0;  // page_lo − tile_lo
  int64_t j0 = 0, j1 = 0;
  // The next page's first n_next K/V rows (same strides), for the kernels to prefetch into
  // L2 while they work: in decode each page comes from memory once, and prefetches spread
  // over the work beat one burst per page. A hint: nullptr when there is none; never read.
  const uint8_t* next_k = nullptr;
  const uint8_t* next_v = nullptr;
  size_t next_k_bytes = 0, next_v_bytes = 0;
  int64_t n_next = 0;
  // The same K rows widened to f32 and stored element-major per 16 rows (dk a multiple of
  // 16): row j's element e at k_major[(j / 16) · 16 · dk + 16 · e + j % 16]. The driver
  // makes it once per segment when many query rows share the segment (prefill), so a kernel
  // can keep 16 keys in the lanes and sum the definition's partial sums with vertical adds.
  // Only the AVX-512 kernel reads it (the others read k; the values are the same); nullptr:
  // none.
  const float* k_major = nullptr;
};

// A tile: its held pages in ascending order (their visible rows disjoint, inside [0, span)),
// and its length (8 · page_tokens; the score rows are pad16(span) long).
struct FlashTile {
  const FlashPage* pages = nullptr;
  int64_t n_pages = 0;
  int64_t span = 0;
};

// One query head's block b of 32 elements quantized for q8_0 K (step 1): the codes, the
// scale and −128 · Σ codes (the start of the SIMD kernels' integer sums, which add 128 to K's
// codes). Packed per block for every head of a tile, so a kernel reaches all heads of a block
// from one pointer at fixed offsets.
struct Q8QueryBlock {
  int32_t minus_128_sum = 0;
  float d = 0.0f;
  int8_t qs[32] = {};
};

// The query heads a tile updates (any number; each head's arithmetic is independent).
// q[h]: [pad16(dk)] zero-padded query; acc[h]: [pad16(dv)] accumulator (padding lanes are
// scratch); m[h]: running max; l[h]: [16] lane sums. For q8_0 K also the quantized query
// (step 1): qblocks [dk/32][n], head h's block b at qblocks[b · n + h]. Not owned.
struct FlashHeads {
  int64_t n = 0;
  const float* const* q = nullptr;
  const Q8QueryBlock* qblocks = nullptr;
  float* const* acc = nullptr;
  float* m = nullptr;
  float* const* l = nullptr;
};

struct FlashShape {
  int64_t dk = 0, dv = 0;
  float scale = 1.0f;
  float softcap = 0.0f;
};

// Step 5's P_max for q8_0 pair V: at most 32767 (int16), and small enough that span keys of
// |code| <= 127 cannot overflow an int32 sum.
inline int32_t pair_p_max(int64_t span) {
  const int64_t by_sum = int64_t{2147483647} / (127 * std::max<int64_t>(span, 1));
  return static_cast<int32_t>(std::min<int64_t>(32767, by_sum));
}

// Step 2's score from the dot (shared by every implementation so they agree).
inline float flash_score(float dot, const FlashShape& s) {
  float x = dot * s.scale;
  if (s.softcap > 0.0f) x = s.softcap * std::tanh(x / s.softcap);
  return x;
}

// Applies steps 1–5 of one tile to every head. `scores` is scratch of
// heads.n * pad16(tile.span) floats (its contents on return are not part of the result).
using FlashTileFn = void (*)(const FlashShape& shape, const FlashTile& tile,
                             const FlashHeads& heads, float* scores);

void flash_tile_twin(const FlashShape& shape, const FlashTile& tile, const FlashHeads& heads,
                     float* scores);
void flash_tile_avx2(const FlashShape& shape, const FlashTile& tile, const FlashHeads& heads,
                     float* scores);
void flash_tile_avx512(const FlashShape& shape, const FlashTile& tile, const FlashHeads& heads,
                       float* scores);

// One group of 16 K rows (rows[j]: row j of `type` f32 / f16 / bf16, nullptr: zeros) widened
// into FlashPage::k_major's layout ([dk][16]; dk a multiple of 16). AVX-512 only.
void k_major_group_avx512(tensor::DType type, const uint8_t* const* rows, int64_t dk, float* out);

// Shared pieces of the definition (scalar; the twin and the driver use them).
float tree16_sum(const float* a);
float tree16_max(const float* a);
// (m_a, l_a[16], acc_a[dv]) ← the fold of segment state b into a (see above).
void flash_combine(float& m_a, float* l_a, float* acc_a, float m_b, const float* l_b,
                   const float* acc_b, int64_t dv);
// flash_combine for n heads at once, bitwise: m [n], l [n][16], acc [n][dv16] (dv16 =
// pad16(dv); the padding lanes are scratch, as in FlashHeads). The AVX-512 form serves the
// fold of a decode step's segments, which runs on one thread after the parallel part.
void flash_combine_heads_avx512(float* m_a, float* l_a, float* acc_a, const float* m_b,
                                const float* l_b, const float* acc_b, int64_t n, int64_t dv16);
// out[0, dv) = the head's normalised result (with its sink logit when sink != nullptr).
void flash_finish(float m, const float* l, const float* acc, const float* sink, int64_t dv,
                  float* out);

// Which implementation the driver uses. kAuto: the best this machine allows.
enum class FlashIsa { kAuto, kTwin, kAvx2, kAvx512 };
bool flash_isa_available(FlashIsa isa);
FlashTileFn flash_tile_fn(FlashIsa isa);  // kAuto resolves; throws if unavailable

// Process-wide override for tests and benchmarks (not for concurrent attention calls).
class ScopedFlashIsa {
 public:
  explicit ScopedFlashIsa(FlashIsa isa);
  ~ScopedFlashIsa();
  ScopedFlashIsa(const ScopedFlashIsa&) = delete;
  ScopedFlashIsa& operator=(const ScopedFlashIsa&) = delete;

 private:
  FlashIsa saved_;
};
FlashIsa flash_isa_override();

}  // namespace keel::kernels::detail
