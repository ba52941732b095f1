// IEEE half (binary16) and bfloat16 scalar conversions, round-to-nearest-even.
#include <cstdint>
#include <cstring>

#include "tensor/types.h"

namespace keel::tensor {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds `value >> shift` to nearest, ties to even (shift >= 1).
uint32_t shift_round_even(uint32_t value, int shift) {
  const uint32_t q = value >> shift;
  const uint32_t rem = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return (rem > half || (rem == half && (q & 1u))) ? q + 1 : q;
}

}  // namespace

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  int32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal half: normalize so the float carries it as a normal number.
    exp = 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3ffu;
  }
  return bits_float(sign | (static_cast<uint32_t>(exp + 112) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // nan: keep it quiet, keep the payload's top bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 -> inf
  if (ax < 0x38800000u) {  // below 2^-14: half subnormal (or zero)
    if (ax <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds to 0
    const uint32_t exp = ax >> 23;
    const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    // value = mant * 2^(exp-150); in units of 2^-24 that is mant >> (126 - exp).
    // A carry out of the subnormal range yields 0x400, the smallest normal: correct.
    return static_cast<uint16_t>(sign | shift_round_even(mant, 126 - static_cast<int>(exp)));
  }
  // Normal: rebias the exponent (127 -> 15); a mantissa carry bumps the exponent, and
  // the overflow check above keeps that below inf.
  return static_cast<uint16_t>(sign | shift_round_even(ax - 0x38000000u, 13));
}

float bf16_to_fp32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace keel::tensor
