// Type table and half-precision conversion tests.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tensor/types.h"

namespace keel::tensor {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(TypeTable, GgufBlockSizesAndBytes) {
  struct Want {
    DType type;
    uint32_t code;
    int64_t block;
    size_t bytes;
  };
  const Want want[] = {
      {DType::kF32, 0, 1, 4},      {DType::kF16, 1, 1, 2},       {DType::kQ4_0, 2, 32, 18},
      {DType::kQ4_1, 3, 32, 20},   {DType::kQ5_0, 6, 32, 22},    {DType::kQ5_1, 7, 32, 24},
      {DType::kQ8_0, 8, 32, 34},   {DType::kQ8_1, 9, 32, 36},    {DType::kQ2_K, 10, 256, 84},
      {DType::kQ3_K, 11, 256, 110}, {DType::kQ4_K, 12, 256, 144}, {DType::kQ5_K, 13, 256, 176},
      {DType::kQ6_K, 14, 256, 210}, {DType::kQ8_K, 15, 256, 292}, {DType::kI8, 24, 1, 1},
      {DType::kI16, 25, 1, 2},     {DType::kI32, 26, 1, 4},      {DType::kI64, 27, 1, 8},
      {DType::kF64, 28, 1, 8},     {DType::kBF16, 30, 1, 2},     {DType::kMXFP4, 39, 32, 17},
  };
  for (const Want& w : want) {
    ASSERT_TRUE(is_known_dtype(w.code)) << w.code;
    EXPECT_EQ(static_cast<uint32_t>(w.type), w.code);
    EXPECT_EQ(traits(w.type).block_size, w.block) << dtype_name(w.type);
    EXPECT_EQ(traits(w.type).block_bytes, w.bytes) << dtype_name(w.type);
    EXPECT_EQ(dtype_from_name(dtype_name(w.type)), w.type);
  }
  for (uint32_t code : {4u, 5u, 16u, 23u, 29u, 31u, 38u, 40u, 1000u}) {
    EXPECT_FALSE(is_known_dtype(code)) << code;
  }
  EXPECT_THROW(traits(static_cast<DType>(4)), Error);
}

TEST(TypeTable, NamesParseCaseInsensitively) {
  EXPECT_EQ(dtype_from_name("Q4_K"), DType::kQ4_K);
  EXPECT_EQ(dtype_from_name("q4_k"), DType::kQ4_K);
  EXPECT_EQ(dtype_from_name("BF16"), DType::kBF16);
  EXPECT_EQ(dtype_from_name("MXFP4"), DType::kMXFP4);
  EXPECT_FALSE(dtype_from_name("q4").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_STREQ(dtype_name(DType::kQ6_K), "q6_K");
}

TEST(TypeTable, RowBytesChecksMultiplesAndOverflow) {
  EXPECT_EQ(row_bytes(DType::kF32, 7), 28u);
  EXPECT_EQ(row_bytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(row_bytes(DType::kQ4_K, 512), 288u);
  EXPECT_EQ(row_bytes(DType::kQ8_0, 0), 0u);
  EXPECT_THROW(row_bytes(DType::kQ4_0, 33), Error);
  EXPECT_THROW(row_bytes(DType::kF32, -1), Error);
  EXPECT_THROW(row_bytes(DType::kF64, std::numeric_limits<int64_t>::max()), Error);
  // 2^62 f32 elements need exactly 2^64 bytes: one past size_t.
  EXPECT_THROW(row_bytes(DType::kF32, int64_t{1} << 62), Error);
  EXPECT_EQ(row_bytes(DType::kF32, (int64_t{1} << 62) - 1), ~size_t{3});
  try {
    row_bytes(DType::kQ4_0, 33);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("q4_0"), std::string::npos);
  }
}

TEST(Fp16, ExactValuesAndSpecials) {
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(1e6f), 0x7c00);  // overflow -> inf
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);  // just below the rounding boundary
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // tie rounds to even = inf
  const uint16_t qnan = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(qnan & 0x7c00, 0x7c00);
  EXPECT_NE(qnan & 0x03ff, 0);
  // A signalling NaN whose payload lives only in low bits must stay NaN, not become inf.
  EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(from_bits(0x7f800001u)))));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
  EXPECT_TRUE(std::isinf(fp16_to_fp32(0xfc00)));
  EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);
}

TEST(Fp16, SubnormalsRoundTrip) {
  const float tiny = std::ldexp(1.0f, -24);  // smallest half subnormal
  EXPECT_EQ(fp32_to_fp16(tiny), 0x0001);
  EXPECT_EQ(fp16_to_fp32(0x0001), tiny);
  EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);      // tie -> even (0)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);      // 1.5 ulp tie -> 2
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(fp32_to_fp16(-std::ldexp(5.0f, -26)), 0x8001);     // 1.25 ulp -> 1
  EXPECT_EQ(fp32_to_fp16(std::ldexp(2047.0f, -25)), 0x0400);   // rounds up into normals
  // Every finite half survives a round trip through float bit-exactly.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // nan
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties to even (1).
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 0x3c01 and 0x3c02: ties to even (0x3c02).
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // Mantissa carry into the exponent.
  EXPECT_EQ(fp32_to_fp16(2.0f - std::ldexp(1.0f, -12)), 0x4000);
  // Exhaustive check against the nearest of the two neighbouring halves for many floats.
  for (uint32_t u = 0x33000001u; u < 0x477fe000u; u += 977) {
    const float f = from_bits(u);
    const uint16_t h = fp32_to_fp16(f);
    const float got = fp16_to_fp32(h);
    const float lo = fp16_to_fp32(static_cast<uint16_t>(h - 1));
    const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    ASSERT_LE(std::fabs(got - f), std::fabs(lo - f)) << u;
    ASSERT_LE(std::fabs(got - f), std::fabs(hi - f)) << u;
  }
}

TEST(Bf16, RoundTripAndRounding) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(from_bits(0x7f800001u)))));
  // Ties to even: 0x3f808000 is halfway between 0x3f80 and 0x3f81 -> 0x3f80;
  // 0x3f818000 halfway between 0x3f81 and 0x3f82 -> 0x3f82.
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3f808000u)), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3f818000u)), 0x3f82);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
  // Largest finite float rounds up to inf (correct RNE overflow).
  EXPECT_EQ(fp32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);
  // Subnormals are kept, not flushed.
  EXPECT_EQ(fp32_to_bf16(from_bits(0x00010000u)), 0x0001);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0) continue;
    ASSERT_EQ(fp32_to_bf16(bf16_to_fp32(static_cast<uint16_t>(h))), h) << std::hex << h;
    ASSERT_EQ(bits(bf16_to_fp32(static_cast<uint16_t>(h))), h << 16);
  }
}


// The F16C row conversion (the KV cache's f16 store) against the scalar definition, bit
// for bit: every class of input (zeros, subnormal results and their rounding boundary,
// ties at every exponent, overflow to inf, NaNs with payloads) and a random sample of all
// bit patterns, at every length 0..40 so the 8-wide body and the scalar tail both run.
TEST(HalfConversion, RowConversionMatchesScalarBitwise) {
  std::vector<uint32_t> patterns = {0x00000000u, 0x80000000u, 0x00000001u, 0x007fffffu, 0x00800000u,
                                    0x33000000u, 0x33000001u, 0x337fffffu, 0x33800000u, 0x38800000u,
                                    0x387fe000u, 0x387ff000u, 0x38801000u, 0x3f800000u, 0x3f801000u,
                                    0x3f803000u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x47800000u,
                                    0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7f800001u, 0x7fc00000u,
                                    0x7fa02000u, 0xffffffffu, 0xff801234u, 0xc77ff000u, 0xb3000001u};
  // Ties and near-ties of the 13 dropped bits at every exponent a half can hold.
  for (uint32_t e = 0x67; e <= 0x8f; ++e) {
    for (uint32_t low : {0x0fffu, 0x1000u, 0x1001u, 0x3000u, 0x2fffu}) patterns.push_back((e << 23) | low);
  }
  std::mt19937 rng(12345);
  for (int i = 0; i < 200000; ++i) patterns.push_back(static_cast<uint32_t>(rng()));
  std::vector<float> src(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) src[i] = from_bits(patterns[i]);

  std::vector<uint16_t> fast(src.size()), ref(src.size());
  fp32_to_fp16_row(src.data(), fast.data(), static_cast<int64_t>(src.size()));
  fp32_to_fp16_row(src.data(), ref.data(), static_cast<int64_t>(src.size()), RowIsa::kScalar);
  for (size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ(ref[i], fp32_to_fp16(src[i])) << "scalar row, input 0x" << std::hex << patterns[i];
    ASSERT_EQ(fast[i], ref[i]) << "input 0x" << std::hex << patterns[i];
  }
  // Every length, at an odd byte offset (the KV rows it writes need not be aligned).
  std::vector<uint8_t> out(2 * 41 + 1), want(2 * 41 + 1);
  for (int64_t n = 0; n <= 40; ++n) {
    std::fill(out.begin(), out.end(), 0xAB);
    std::fill(want.begin(), want.end(), 0xAB);
    fp32_to_fp16_row(src.data() + 3, out.data() + 1, n);
    fp32_to_fp16_row(src.data() + 3, want.data() + 1, n, RowIsa::kScalar);
    ASSERT_EQ(out, want) << "n = " << n;
  }
}

}  // namespace
}  // namespace keel::tensor
