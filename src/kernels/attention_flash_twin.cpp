// Scalar twin of the flash tile (attention_flash.h): the definition written out plainly,
// one element at a time. It reads any KV type through tensor::dequantize_row (q8_0 tiles
// through the layout of tensor/q8_tile.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_flash.h"
#include "kernels/exp_defined.h"
#include "tensor/blocks.h"
#include "tensor/q8_tile.h"

// The definition separates multiplies from adds except where it says fma.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels::detail {

float tree16_sum(const float* a) {
  float t[8], u[4], w[2];
  for (int i = 0; i < 8; ++i) t[i] = a[i] + a[i + 8];
  for (int i = 0; i < 4; ++i) u[i] = t[i] + t[i + 4];
  for (int i = 0; i < 2; ++i) w[i] = u[i] + u[i + 2];
  return w[0] + w[1];
}

float tree16_max(const float* a) {
  float t[8], u[4], w[2];
  for (int i = 0; i < 8; ++i) t[i] = max_def(a[i], a[i + 8]);
  for (int i = 0; i < 4; ++i) u[i] = max_def(t[i], t[i + 4]);
  for (int i = 0; i < 2; ++i) w[i] = max_def(u[i], u[i + 2]);
  return max_def(w[0], w[1]);
}

void flash_finish(float m, const float* l, const float* acc, const float* sink, int64_t dv,
                  float* out) {
  float denom = tree16_sum(l);
  float c = 1.0f;
  if (sink) {
    const float m_f = max_def(m, *sink);
    c = exp_defined(m - m_f);
    denom = denom * c + exp_defined(*sink - m_f);  // the sink joins the denominator only
  }
  const float inv = 1.0f / denom;
  for (int64_t d = 0; d < dv; ++d) out[d] = sink ? (acc[d] * c) * inv : acc[d] * inv;
}

void flash_combine(float& m_a, float* l_a, float* acc_a, float m_b, const float* l_b,
                   const float* acc_b, int64_t dv) {
  const float m = max_def(m_a, m_b);
  const float ca = exp_defined(m_a - m), cb = exp_defined(m_b - m);
  for (int i = 0; i < 16; ++i) l_a[i] = l_a[i] * ca + l_b[i] * cb;
  for (int64_t d = 0; d < dv; ++d) acc_a[d] = acc_a[d] * ca + acc_b[d] * cb;
  m_a = m;
}

namespace {

float dot16(const float* q, const float* k, int64_t n) {
  float a[16] = {};
  for (int64_t i = 0; i < n; ++i) a[i % 16] = std::fma(q[i], k[i], a[i % 16]);
  return tree16_sum(a);
}

// Step 1 for q8_0 K: the integer block dots of head h's quantized query with row k.
float dot_q8(const FlashHeads& hd, int64_t h, const uint8_t* k, int64_t n) {
  float dot = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b) {
    tensor::BlockQ8_0 blk;
    std::memcpy(&blk, k + b * sizeof(tensor::BlockQ8_0), sizeof blk);
    int32_t isum = 0;
    const Q8QueryBlock& qb = hd.qblocks[b * hd.n + h];
    for (int i = 0; i < 32; ++i) isum += int32_t{qb.qs[i]} * int32_t{blk.qs[i]};
    dot = std::fma(qb.d * tensor::fp16_to_fp32(blk.d), static_cast<float>(isum), dot);
  }
  return dot;
}

float pair_scale(const FlashPage& page, int64_t b, int64_t j) {
  uint16_t h;
  std::memcpy(&h, page.v + 2 * (b * page.tile_rows + j), 2);
  return tensor::fp16_to_fp32(h);
}

int32_t pair_code(const FlashPage& page, int64_t dv, int64_t j, int64_t d) {
  const uint8_t* codes = page.v + tensor::q8_tile::codes_offset(tensor::q8_tile::value_pairs(page.tile_rows, dv));
  return static_cast<int8_t>(codes[(j / 2) * 2 * dv + 2 * d + (j & 1)]);
}

// Step 5's integer p·v for V in q8_0 pair tiles (p_j in scores, after the softmax update).
void values_pairs(const FlashShape& sh, const FlashTile& t, const FlashHeads& hd, const float* scores) {
  const int64_t sp = pad16(t.span), nb = sh.dv / 32;
  const int32_t p_max = pair_p_max(t.span);
  thread_local std::vector<float> w, m_b, f_b;
  thread_local std::vector<int32_t> isum;
  w.assign(static_cast<size_t>(nb * sp), 0.0f);  // [b][position]
  m_b.assign(static_cast<size_t>(nb), 0.0f);
  f_b.resize(static_cast<size_t>(nb));
  isum.resize(static_cast<size_t>(sh.dv));
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t pg = 0; pg < t.n_pages; ++pg)
      for (int64_t j = t.pages[pg].j0; j < t.pages[pg].j1; ++j) m_b[b] = max_def(m_b[b], pair_scale(t.pages[pg], b, j));
    const float inv = m_b[b] > 0.0f ? static_cast<float>(p_max) / m_b[b] : 0.0f;
    for (int64_t pg = 0; pg < t.n_pages; ++pg) {
      const FlashPage& page = t.pages[pg];
      for (int64_t j = page.j0; j < page.j1; ++j) w[b * sp + page.offset + j] = pair_scale(page, b, j) * inv;
    }
    f_b[b] = m_b[b] / static_cast<float>(p_max);
  }
  for (int64_t h = 0; h < hd.n; ++h) {
    const float* p = scores + h * sp;
    std::fill(isum.begin(), isum.end(), 0);
    for (int64_t pg = 0; pg < t.n_pages; ++pg) {
      const FlashPage& page = t.pages[pg];
      for (int64_t j = page.j0; j < page.j1; ++j) {
        const int64_t pos = page.offset + j;
        for (int64_t d = 0; d < sh.dv; ++d) {
          const auto weight = static_cast<int32_t>(std::nearbyint(p[pos] * w[(d / 32) * sp + pos]));
          isum[d] += weight * pair_code(page, sh.dv, j, d);
        }
      }
    }
    float* acc = hd.acc[h];
    for (int64_t d = 0; d < sh.dv; ++d) acc[d] = std::fma(f_b[d / 32], static_cast<float>(isum[d]), acc[d]);
  }
}

}  // namespace

void flash_tile_twin(const FlashShape& sh, const FlashTile& t, const FlashHeads& hd,
                     float* scores) {
  const int64_t sp = pad16(t.span);
  const float ninf = -std::numeric_limits<float>::infinity();
  thread_local std::vector<float> row;
  thread_local std::vector<tensor::BlockQ8_0> key_blocks;
  row.resize(static_cast<size_t>(std::max(sh.dk, sh.dv)));

  // scores: [hd.n][sp], index j = position − tile_lo
  for (int64_t i = 0; i < hd.n * sp; ++i) scores[i] = ninf;
  for (int64_t pg = 0; pg < t.n_pages; ++pg) {
    const FlashPage& page = t.pages[pg];
    float* s = scores + page.offset;
    for (int64_t j = page.j0; j < page.j1; ++j) {
      const uint8_t* k = page.k + j * page.k_stride;
      if (page.k_tiles) {  // the row's q8_0 blocks out of the key tile
        key_blocks.resize(static_cast<size_t>(sh.dk / 32));
        tensor::q8_tile::read_blocks(page.k, tensor::q8_tile::key_groups(page.tile_rows, sh.dk), j, key_blocks.data());
        k = reinterpret_cast<const uint8_t*>(key_blocks.data());
      }
      if (page.k_type == tensor::DType::kQ8_0) {
        for (int64_t h = 0; h < hd.n; ++h) s[h * sp + j] = flash_score(dot_q8(hd, h, k, sh.dk), sh);
        continue;
      }
      tensor::dequantize_row(page.k_type, k, row.data(), sh.dk);
      for (int64_t h = 0; h < hd.n; ++h) s[h * sp + j] = flash_score(dot16(hd.q[h], row.data(), sh.dk), sh);
    }
  }

  for (int64_t h = 0; h < hd.n; ++h) {
    float* s = scores + h * sp;
    float mx[16];
    for (float& x : mx) x = ninf;
    for (int64_t j = 0; j < sp; ++j) mx[j % 16] = max_def(mx[j % 16], s[j]);
    const float m_new = max_def(hd.m[h], tree16_max(mx));
    const float c = exp_defined(hd.m[h] - m_new);
    for (int64_t j = 0; j < sp; ++j) s[j] = exp_defined(s[j] - m_new);
    float* l = hd.l[h];
    for (int i = 0; i < 16; ++i) l[i] = l[i] * c;
    for (int64_t j = 0; j < sp; ++j) l[j % 16] = l[j % 16] + s[j];
    hd.m[h] = m_new;
    if (c != 1.0f) {
      for (int64_t d = 0; d < sh.dv; ++d) hd.acc[h][d] = hd.acc[h][d] * c;
    }
  }

  if (t.n_pages > 0 && t.pages[0].v_pairs) {
    values_pairs(sh, t, hd, scores);
    return;
  }
  for (int64_t pg = 0; pg < t.n_pages; ++pg) {
    const FlashPage& page = t.pages[pg];
    const float* p = scores + page.offset;
    for (int64_t j = page.j0; j < page.j1; ++j) {
      tensor::dequantize_row(page.v_type, page.v + j * page.v_stride, row.data(), sh.dv);
      for (int64_t h = 0; h < hd.n; ++h) {
        const float pj = p[h * sp + j];
        float* acc = hd.acc[h];
        for (int64_t d = 0; d < sh.dv; ++d) acc[d] = std::fma(pj, row[d], acc[d]);
      }
    }
  }
}

}  // namespace keel::kernels::detail
