// The scalar twin of the BF16 pair-dot path (matmul_bf16dot.h), the activation rounding's
// scratch, and the choice of implementation.
#include "kernels/matmul_bf16dot.h"

#include <bit>
#include <cstring>
#include <vector>

#include "core/cpu.h"
#include "kernels/matmul.h"
#include "kernels/qmatmul.h"
#include "tensor/types.h"

// The definition adds in a fixed order; a contracted fma would change the bits.
#pragma GCC optimize("fp-contract=off")

namespace keel::kernels {
namespace {

// A denormal (exponent bits zero) read or written as a zero of its sign.
float flush(float f) {
  const auto u = std::bit_cast<uint32_t>(f);
  return (u & 0x7f800000u) == 0 ? std::bit_cast<float>(u & 0x80000000u) : f;
}

double bf16_input(uint16_t h) { return flush(tensor::bf16_to_fp32(h)); }

// One step of the instruction for lane sum L: L + a1·b1, then + a0·b0. The products of two
// bf16 are exact in double, and a double sum of two such values rounds to float correctly
// (53 >= 2·24 + 2 bits), so this is the single rounding of each sum the instruction makes;
// a product beyond float's range still sums as the instruction's wider intermediate does.
float pair_step(float l, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
  const float t = flush(static_cast<float>(static_cast<double>(l) + bf16_input(a1) * bf16_input(b1)));
  return flush(static_cast<float>(static_cast<double>(t) + bf16_input(a0) * bf16_input(b0)));
}

uint16_t weight_at(const uint8_t* row, int64_t k) {
  uint16_t h;
  std::memcpy(&h, row + 2 * k, sizeof h);
  return h;
}

float twin_dot(const uint8_t* w_row, int64_t n_in, const uint16_t* xb) {
  float lane[16] = {};
  for (int64_t c = 0; c < n_in; c += 32) {
    for (int j = 0; j < 16; ++j) {
      const int64_t k = c + 2 * j;
      // Past n_in: the zero padding (0·0 adds +0, as in the kernel's masked load).
      const uint16_t w0 = k < n_in ? weight_at(w_row, k) : 0, w1 = k + 1 < n_in ? weight_at(w_row, k + 1) : 0;
      lane[j] = pair_step(lane[j], w0, w1, xb[k], xb[k + 1]);
    }
  }
  for (int half = 8; half >= 1; half /= 2) {
    for (int j = 0; j < half; ++j) lane[j] = lane[j] + lane[j + half];
  }
  return lane[0];
}

// The machine (as capped by KEEL_CPU) runs the AVX-512 BF16 implementations.
bool machine_has_bf16dot() { return q::best_isa() == q::Isa::kAvx512 && cpu_features().avx512_bf16; }

}  // namespace

bool bf16dot_available(const WeightMatrix& w) { return w.type == tensor::DType::kBF16 && machine_has_bf16dot(); }

Bf16Rows bf16dot_rows_buffer(int64_t n_rows, int64_t n_in) {
  thread_local std::vector<uint16_t> buf;
  Bf16Rows rows;
  rows.stride = (n_in + 31) / 32 * 32;
  const size_t need = static_cast<size_t>(n_rows * rows.stride) + 32;  // + 64 bytes for alignment
  if (buf.size() < need) buf.resize(need);
  rows.data = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t{63});
  return rows;
}

void bf16dot_round_into(const Bf16Rows& out, const float* x, int64_t n_in, int64_t r0, int64_t r1) {
  if (r0 >= r1) return;
  if (machine_has_bf16dot()) {
    bf16dot::round_rows_avx512(x + r0 * n_in, r1 - r0, n_in, out.data + r0 * out.stride, out.stride);
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    uint16_t* o = out.data + r * out.stride;
    for (int64_t k = 0; k < n_in; ++k) o[k] = tensor::fp32_to_bf16(x[r * n_in + k]);
    for (int64_t k = n_in; k < out.stride; ++k) o[k] = 0;
  }
}

Bf16Rows bf16dot_round_rows(const float* x, int64_t n_rows, int64_t n_in) {
  const Bf16Rows rows = bf16dot_rows_buffer(n_rows, n_in);
  bf16dot_round_into(rows, x, n_in, 0, n_rows);
  return rows;
}

void bf16dot_range(const WeightMatrix& w, const Bf16Rows& x, int64_t n_rows, float* y, int64_t o_begin,
                   int64_t o_end) {
  bf16dot::range_avx512(w, x, n_rows, y, o_begin, o_end);
}

void bf16dot_range_twin(const WeightMatrix& w, const Bf16Rows& x, int64_t n_rows, float* y, int64_t o_begin,
                        int64_t o_end) {
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t o = o_begin; o < o_end; ++o) y[r * w.n_out + o] = twin_dot(w.row(o), w.n_in, x.data + r * x.stride);
  }
}

}  // namespace keel::kernels
