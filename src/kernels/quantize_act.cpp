#include "kernels/quantize_act.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/cpu.h"
#include "core/error.h"

namespace keel::kernels::q {

bool quantize_block_q8_avx512(const float* x, int n, int8_t* q, float* d_out);  // its twin

namespace {
bool simd_quantizer() {
  static const bool ok = cpu_features().avx512f && cpu_features().avx512bw && cpu_features().avx512vl;
  return ok;
}
}  // namespace

float quantize_block_q8(const float* x, int n, int8_t* q) {
  float d;
  if (n % 16 == 0 && simd_quantizer() && quantize_block_q8_avx512(x, n, q, &d)) return d;
  return quantize_block_q8_scalar(x, n, q);
}

float quantize_block_q8_scalar(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  bool finite = true;
  for (int i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    finite = finite && std::isfinite(a);
    amax = a > amax ? a : amax;
  }
  if (!finite) {
    // Non-finite input: the product must come out non-finite, never as plausible numbers.
    for (int i = 0; i < n; ++i) q[i] = 0;
    return std::numeric_limits<float>::quiet_NaN();
  }
  if (amax == 0.0f) {
    for (int i = 0; i < n; ++i) q[i] = 0;
    return 0.0f;
  }
  const float id = 127.0f / amax;
  for (int i = 0; i < n; ++i) {
    float v = x[i] * id;
    v = v < 127.0f ? v : 127.0f;  // x * id can exceed 127 by an ulp
    v = v > -127.0f ? v : -127.0f;
    q[i] = static_cast<int8_t>(std::nearbyint(v));  // default rounding: half to even
  }
  return amax / 127.0f;
}

ActRows ActBuffer::prepare(int64_t n_rows, int64_t n_in, ActFormat format) {
  const int64_t block = act_block(format);
  if (n_in <= 0 || n_in % block != 0 || n_rows < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "quantize activations: row length " + std::to_string(n_in) +
                    " is not a positive multiple of " + std::to_string(block));
  }
  n_in_ = n_in;
  format_ = format;
  const size_t n = static_cast<size_t>(n_rows * n_in);
  if (qs_.size() < n) qs_.resize(n);
  if (d_.size() < n / block) d_.resize(n / block);
  if (sum32_.size() < n / 32) sum32_.resize(n / 32);
  if (format == ActFormat::kQ8x256 && sum16_.size() < n / 16) sum16_.resize(n / 16);
  ActRows v;
  v.format = format;
  v.n_in = n_in;
  v.n_rows = n_rows;
  v.qs = qs_.data();
  v.d = d_.data();
  v.sum32 = sum32_.data();
  v.sum16 = format == ActFormat::kQ8x256 ? sum16_.data() : nullptr;
  return v;
}

void ActBuffer::quantize_rows(const float* x, int64_t r0, int64_t r1) {
  const int block = static_cast<int>(act_block(format_));
  const int64_t n_in = n_in_, nb = n_in / block;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * n_in;
    int8_t* qr = qs_.data() + r * n_in;
    float* dr = d_.data() + r * nb;
    for (int64_t b = 0; b < nb; ++b) dr[b] = quantize_block_q8(xr + b * block, block, qr + b * block);
    int16_t* s32 = sum32_.data() + r * (n_in / 32);
    for (int64_t s = 0; s < n_in / 32; ++s) {
      int sum = 0;
      for (int i = 0; i < 32; ++i) sum += qr[s * 32 + i];
      s32[s] = static_cast<int16_t>(sum);
    }
    if (format_ == ActFormat::kQ8x256) {
      int16_t* s16 = sum16_.data() + r * (n_in / 16);
      for (int64_t s = 0; s < n_in / 16; ++s) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += qr[s * 16 + i];
        s16[s] = static_cast<int16_t>(sum);
      }
    }
  }
}

ActRows ActBuffer::quantize(const float* x, int64_t n_rows, int64_t n_in, ActFormat format) {
  ActRows v = prepare(n_rows, n_in, format);
  quantize_rows(x, 0, n_rows);
  return v;
}

}  // namespace keel::kernels::q
