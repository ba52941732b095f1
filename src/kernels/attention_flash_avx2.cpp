// AVX2 flash tile (attention_flash.h): the twin's bits with the 16 lanes of the definition
// held in two ymm registers (lanes 0–7, 8–15). K/V rows are read straight from the page
// like the AVX-512 form; a row tail shorter than 16 is copied into a zeroed buffer first
// (a zero query lane times a zero key adds exactly nothing: sums never hold −0).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_flash.h"
#include "kernels/exp_defined.h"
#include "tensor/blocks.h"
#include "tensor/q8_tile.h"

#pragma GCC push_options
#pragma GCC target("avx2,f16c,fma")
// The definition separates multiplies from adds except where it says fma.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels::detail {
namespace {

using tensor::DType;

struct V16 {
  __m256 lo, hi;
};

template <DType T>
inline __m256 load8(const uint8_t* row, int64_t i) {
  if constexpr (T == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  } else if constexpr (T == DType::kBF16) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  } else {
    const uint8_t* blk = row + (i / 32) * sizeof(tensor::BlockQ8_0);
    uint16_t h;
    std::memcpy(&h, blk, 2);
    const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + i % 32)));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(_cvtsh_ss(h)));
  }
}

template <DType T>
inline V16 load16(const uint8_t* row, int64_t i) {
  return {load8<T>(row, i), load8<T>(row, i + 8)};
}

// Elements [i, n) of a row zero-extended to 16 (never q8_0, whose rows are whole blocks).
template <DType T>
inline V16 load16_tail(const uint8_t* row, int64_t i, int64_t n) {
  alignas(32) uint8_t buf[64] = {};
  const size_t elem = T == DType::kF32 ? 4 : 2;
  std::memcpy(buf, row + elem * static_cast<size_t>(i), elem * static_cast<size_t>(n - i));
  return load16<T>(buf, 0);
}

inline float reduce_sum(V16 a) {  // tree16_sum
  const __m256 t = _mm256_add_ps(a.lo, a.hi);
  const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  const __m128 w = _mm_add_ps(u, _mm_movehl_ps(u, u));
  return _mm_cvtss_f32(_mm_add_ss(w, _mm_shuffle_ps(w, w, 1)));
}

inline float reduce_max(V16 a) {  // tree16_max
  const __m256 t = _mm256_max_ps(a.lo, a.hi);
  const __m128 u = _mm_max_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
  const __m128 w = _mm_max_ps(u, _mm_movehl_ps(u, u));
  return _mm_cvtss_f32(_mm_max_ss(w, _mm_shuffle_ps(w, w, 1)));
}

// Steps 1–2 for NB (<= 4) heads; q rows are zero-padded to pad16(dk).
template <DType KT, int NB>
void scores_block(const FlashShape& sh, const FlashPage& t, const float* const* q, float* s,
                  int64_t sp) {
  const int64_t dk = sh.dk, full = dk / 16 * 16;
  for (int64_t j = t.j0; j < t.j1; ++j) {
    const uint8_t* row = t.k + j * t.k_stride;
    __m256 lo[NB], hi[NB];
    for (int h = 0; h < NB; ++h) lo[h] = hi[h] = _mm256_setzero_ps();
    auto step = [&](V16 k, int64_t i) {
      for (int h = 0; h < NB; ++h) {
        lo[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + i), k.lo, lo[h]);
        hi[h] = _mm256_fmadd_ps(_mm256_loadu_ps(q[h] + i + 8), k.hi, hi[h]);
      }
    };
    int64_t i = 0;
    for (; i < full; i += 16) step(load16<KT>(row, i), i);
    if constexpr (KT != DType::kQ8_0) {
      if (i < dk) step(load16_tail<KT>(row, i, dk), i);
    }
    for (int h = 0; h < NB; ++h) s[h * sp + j] = flash_score(reduce_sum({lo[h], hi[h]}), sh);
  }
}

// Step 5's fma part for NB (<= 4) heads, 16 columns at a time (accumulators padded to 16).
template <DType VT, int NB>
void values_block(const FlashShape& sh, const FlashPage& t, const float* p, int64_t sp,
                  float* const* acc) {
  const int64_t dv = sh.dv;
  for (int64_t c = 0; c < dv; c += 16) {
    __m256 lo[NB], hi[NB];
    for (int h = 0; h < NB; ++h) {
      lo[h] = _mm256_loadu_ps(acc[h] + c);
      hi[h] = _mm256_loadu_ps(acc[h] + c + 8);
    }
    for (int64_t j = t.j0; j < t.j1; ++j) {
      const uint8_t* row = t.v + j * t.v_stride;
      V16 v;
      if constexpr (VT == DType::kQ8_0) {
        v = load16<VT>(row, c);
      } else {
        v = c + 16 <= dv ? load16<VT>(row, c) : load16_tail<VT>(row, c, dv);
      }
      for (int h = 0; h < NB; ++h) {
        const __m256 pj = _mm256_set1_ps(p[h * sp + j]);
        lo[h] = _mm256_fmadd_ps(pj, v.lo, lo[h]);
        hi[h] = _mm256_fmadd_ps(pj, v.hi, hi[h]);
      }
    }
    for (int h = 0; h < NB; ++h) {
      _mm256_storeu_ps(acc[h] + c, lo[h]);
      _mm256_storeu_ps(acc[h] + c + 8, hi[h]);
    }
  }
}

// Steps 1–2 for q8_0 K (the integer dot): each block's 32 quants and the query's codes
// widened to int16, multiplied and summed in pairs by vpmaddwd (exact), then summed.
void scores_q8(const FlashShape& sh, const FlashPage& t, const FlashHeads& hd, float* s, int64_t sp) {
  const int64_t nb = sh.dk / 32;
  thread_local std::vector<tensor::BlockQ8_0> key_blocks;
  key_blocks.resize(static_cast<size_t>(nb));
  for (int64_t j = t.j0; j < t.j1; ++j) {
    const uint8_t* row = t.k + j * t.k_stride;
    if (t.k_tiles) {  // the row's blocks out of the key tile (this form reads rows)
      tensor::q8_tile::read_blocks(t.k, tensor::q8_tile::key_groups(t.tile_rows, sh.dk), j, key_blocks.data());
      row = reinterpret_cast<const uint8_t*>(key_blocks.data());
    }
    for (int64_t h = 0; h < hd.n; ++h) {
      float dot = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = row + b * sizeof(tensor::BlockQ8_0);
        uint16_t kd_bits;
        std::memcpy(&kd_bits, blk, 2);
        const __m256i k = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
        const Q8QueryBlock& qb = hd.qblocks[b * hd.n + h];
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb.qs));
        const __m256i lo = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_castsi256_si128(k)),
                                             _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)));
        const __m256i hi = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm256_extracti128_si256(k, 1)),
                                             _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)));
        const __m256i m = _mm256_add_epi32(lo, hi);
        __m128i x = _mm_add_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
        x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4E));
        x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xB1));
        const float dd = qb.d * _cvtsh_ss(kd_bits);
        dot = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(dd), _mm_set_ss(static_cast<float>(_mm_cvtsi128_si32(x))),
                                         _mm_set_ss(dot)));
      }
      s[h * sp + j] = flash_score(dot, sh);
    }
  }
}

template <DType KT>
void scores_all(const FlashShape& sh, const FlashPage& t, const FlashHeads& hd, float* s, int64_t sp) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 4) {
    switch (std::min<int64_t>(4, hd.n - h0)) {
      case 1: scores_block<KT, 1>(sh, t, hd.q + h0, s + h0 * sp, sp); break;
      case 2: scores_block<KT, 2>(sh, t, hd.q + h0, s + h0 * sp, sp); break;
      case 3: scores_block<KT, 3>(sh, t, hd.q + h0, s + h0 * sp, sp); break;
      default: scores_block<KT, 4>(sh, t, hd.q + h0, s + h0 * sp, sp); break;
    }
  }
}

template <DType VT>
void values_all(const FlashShape& sh, const FlashPage& t, const FlashHeads& hd, const float* p,
                int64_t sp) {
  for (int64_t h0 = 0; h0 < hd.n; h0 += 4) {
    switch (std::min<int64_t>(4, hd.n - h0)) {
      case 1: values_block<VT, 1>(sh, t, p + h0 * sp, sp, hd.acc + h0); break;
      case 2: values_block<VT, 2>(sh, t, p + h0 * sp, sp, hd.acc + h0); break;
      case 3: values_block<VT, 3>(sh, t, p + h0 * sp, sp, hd.acc + h0); break;
      default: values_block<VT, 4>(sh, t, p + h0 * sp, sp, hd.acc + h0); break;
    }
  }
}

// Step 5 for q8_0 pair V (attention_flash.h), one head at a time: the head's weights P as
// int16, then per block 4 × 8 int32 sums, two keys per 32-bit lane by vpmaddwd (exact).
void values_pairs(const FlashShape& sh, const FlashTile& tile, const FlashHeads& hd, const float* scores,
                  int64_t sp) {
  const int64_t dv = sh.dv, nb = dv / 32;
  const int32_t p_max = pair_p_max(tile.span);
  thread_local std::vector<float> w, f;
  thread_local std::vector<int16_t> pq;
  w.assign(static_cast<size_t>(nb * sp), 0.0f);  // [b][position]
  f.resize(static_cast<size_t>(nb));
  pq.resize(static_cast<size_t>(nb * sp));
  auto scale = [](const FlashPage& t, int64_t b, int64_t j) {
    uint16_t h;
    std::memcpy(&h, t.v + 2 * (b * t.tile_rows + j), 2);
    return _cvtsh_ss(h);
  };
  for (int64_t b = 0; b < nb; ++b) {
    float m_b = 0.0f;
    for (int64_t pg = 0; pg < tile.n_pages; ++pg)
      for (int64_t j = tile.pages[pg].j0; j < tile.pages[pg].j1; ++j) m_b = max_def(m_b, scale(tile.pages[pg], b, j));
    const float inv = m_b > 0.0f ? static_cast<float>(p_max) / m_b : 0.0f;
    f[b] = m_b / static_cast<float>(p_max);
    for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
      const FlashPage& t = tile.pages[pg];
      for (int64_t j = t.j0; j < t.j1; ++j) w[b * sp + t.offset + j] = scale(t, b, j) * inv;
    }
  }
  for (int64_t h = 0; h < hd.n; ++h) {
    const float* p = scores + h * sp;
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t j = 0; j < sp; j += 8) {  // vcvtps2dq rounds half to even (MXCSR default)
        const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + j), _mm256_loadu_ps(&w[b * sp + j])));
        const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(&pq[b * sp + j]), q16);
      }
    }
    for (int64_t b = 0; b < nb; ++b) {
      __m256i a[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
      const int16_t* pb = &pq[b * sp];
      for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
        const FlashPage& t = tile.pages[pg];
        const uint8_t* codes = t.v + tensor::q8_tile::codes_offset(tensor::q8_tile::value_pairs(t.tile_rows, dv)) + 64 * b;
        for (int64_t jp = t.j0 / 2; jp < (t.j1 + 1) / 2; ++jp) {
          const uint8_t* c = codes + jp * 2 * dv;
          int32_t pair;
          std::memcpy(&pair, pb + t.offset + 2 * jp, 4);
          const __m256i bc = _mm256_set1_epi32(pair);
          for (int i = 0; i < 4; ++i) {
            const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 16 * i)));
            a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(v, bc));
          }
        }
      }
      const __m256 fv = _mm256_set1_ps(f[b]);
      float* o = hd.acc[h] + 32 * b;
      for (int i = 0; i < 4; ++i)
        _mm256_storeu_ps(o + 8 * i, _mm256_fmadd_ps(fv, _mm256_cvtepi32_ps(a[i]), _mm256_loadu_ps(o + 8 * i)));
    }
  }
}

// Steps 3–4 and the rescale of step 5 for every head.
void softmax_update(const FlashShape& sh, const FlashHeads& hd, float* s, int64_t sp) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t h = 0; h < hd.n; ++h) {
    float* sh_s = s + h * sp;
    V16 mx{ninf, ninf};
    for (int64_t j = 0; j < sp; j += 16) {
      mx.lo = _mm256_max_ps(mx.lo, _mm256_loadu_ps(sh_s + j));
      mx.hi = _mm256_max_ps(mx.hi, _mm256_loadu_ps(sh_s + j + 8));
    }
    const float m_new = max_def(hd.m[h], reduce_max(mx));
    const float c = exp_defined(hd.m[h] - m_new);
    const __m256 mv = _mm256_set1_ps(m_new), cv = _mm256_set1_ps(c);
    __m256 l_lo = _mm256_mul_ps(_mm256_loadu_ps(hd.l[h]), cv);
    __m256 l_hi = _mm256_mul_ps(_mm256_loadu_ps(hd.l[h] + 8), cv);
    for (int64_t j = 0; j < sp; j += 16) {
      const __m256 p_lo = exp_defined_x8(_mm256_sub_ps(_mm256_loadu_ps(sh_s + j), mv));
      const __m256 p_hi = exp_defined_x8(_mm256_sub_ps(_mm256_loadu_ps(sh_s + j + 8), mv));
      _mm256_storeu_ps(sh_s + j, p_lo);
      _mm256_storeu_ps(sh_s + j + 8, p_hi);
      l_lo = _mm256_add_ps(l_lo, p_lo);
      l_hi = _mm256_add_ps(l_hi, p_hi);
    }
    _mm256_storeu_ps(hd.l[h], l_lo);
    _mm256_storeu_ps(hd.l[h] + 8, l_hi);
    hd.m[h] = m_new;
    if (c != 1.0f) {
      for (int64_t d = 0; d < sh.dv; d += 8)
        _mm256_storeu_ps(hd.acc[h] + d, _mm256_mul_ps(_mm256_loadu_ps(hd.acc[h] + d), cv));
    }
  }
}

}  // namespace

void flash_tile_avx2(const FlashShape& sh, const FlashTile& tile, const FlashHeads& hd,
                     float* scores) {
  const int64_t sp = pad16(tile.span);
  std::fill(scores, scores + hd.n * sp, -std::numeric_limits<float>::infinity());
  for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
    const FlashPage& t = tile.pages[pg];
    float* s = scores + t.offset;
    switch (t.k_type) {
      case DType::kF32: scores_all<DType::kF32>(sh, t, hd, s, sp); break;
      case DType::kF16: scores_all<DType::kF16>(sh, t, hd, s, sp); break;
      case DType::kBF16: scores_all<DType::kBF16>(sh, t, hd, s, sp); break;
      default: scores_q8(sh, t, hd, s, sp); break;
    }
  }
  softmax_update(sh, hd, scores, sp);
  if (tile.n_pages > 0 && tile.pages[0].v_pairs) {
    values_pairs(sh, tile, hd, scores, sp);
    return;
  }
  for (int64_t pg = 0; pg < tile.n_pages; ++pg) {
    const FlashPage& t = tile.pages[pg];
    const float* p = scores + t.offset;
    switch (t.v_type) {
      case DType::kF32: values_all<DType::kF32>(sh, t, hd, p, sp); break;
      case DType::kF16: values_all<DType::kF16>(sh, t, hd, p, sp); break;
      case DType::kBF16: values_all<DType::kBF16>(sh, t, hd, p, sp); break;
      default: values_all<DType::kQ8_0>(sh, t, hd, p, sp); break;
    }
  }
}

}  // namespace keel::kernels::detail

#pragma GCC pop_options
