// Dequantization of hand-built blocks with known values: nibble order, fifth/high bits,
// sign of scales, packed 6-bit scales. Expected values are written out by hand from the
// GGUF layouts, not computed with the code under test.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tensor/blocks.h"
#include "tensor/types.h"

namespace keel::tensor {
namespace {

template <typename B>
std::vector<float> dequantize(DType type, const B& block) {
  std::vector<float> out(static_cast<size_t>(traits(type).block_size));
  dequantize_row(type, &block, out.data(), static_cast<int64_t>(out.size()));
  return out;
}

// Re-quantizing a dequantized block must reproduce its values. Only used for blocks whose
// largest element sits at the code a max-based quantizer picks for it (so the scale is
// recoverable): arbitrary blocks are representable but not necessarily found.
template <typename B>
void expect_requantizes(DType type, const std::vector<float>& values, float tol) {
  std::vector<uint8_t> buf(row_bytes(type, static_cast<int64_t>(values.size())));
  quantize_row(type, values.data(), buf.data(), static_cast<int64_t>(values.size()));
  std::vector<float> back(values.size());
  dequantize_row(type, buf.data(), back.data(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) ASSERT_NEAR(back[i], values[i], tol) << dtype_name(type) << " i=" << i;
}

TEST(Blocks, Q4_0NibbleOrderAndOffset) {
  BlockQ4_0 b{};
  b.d = fp32_to_fp16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequantize(DType::kQ4_0, b);
  EXPECT_EQ(y[0], -4.0f);    // (0 - 8) * 0.5, low nibble of qs[0]
  EXPECT_EQ(y[15], 3.5f);    // (15 - 8) * 0.5
  EXPECT_EQ(y[16], 3.5f);    // high nibble of qs[0] = 15 -> element 16, not element 1
  EXPECT_EQ(y[31], -4.0f);   // high nibble of qs[15] = 0
  EXPECT_EQ(y[8], 0.0f);
  expect_requantizes<BlockQ4_0>(DType::kQ4_0, y, 0.0f);
}

TEST(Blocks, Q4_1Min) {
  BlockQ4_1 b{};
  b.d = fp32_to_fp16(0.25f);
  b.m = fp32_to_fp16(-1.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (j << 4));
  const auto y = dequantize(DType::kQ4_1, b);
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[15], 2.75f);
  EXPECT_EQ(y[20], 0.0f);  // 4 * 0.25 - 1
  expect_requantizes<BlockQ4_1>(DType::kQ4_1, y, 1e-6f);
}

TEST(Blocks, Q5_0FifthBitFromQh) {
  BlockQ5_0 b{};
  b.d = fp32_to_fp16(2.0f);
  // qh is a little-endian 32-bit mask: bit j is element j's fifth bit.
  b.qh[0] = 0x01;  // element 0
  b.qh[2] = 0x02;  // bit 17 -> element 17
  b.qh[3] = 0x80;  // bit 31 -> element 31
  for (int j = 0; j < 16; ++j) b.qs[j] = 0x33;  // every nibble 3
  const auto y = dequantize(DType::kQ5_0, b);
  EXPECT_EQ(y[0], 6.0f);     // (3 + 16 - 16) * 2
  EXPECT_EQ(y[1], -26.0f);   // (3 - 16) * 2
  EXPECT_EQ(y[16], -26.0f);
  EXPECT_EQ(y[17], 6.0f);
  EXPECT_EQ(y[31], 6.0f);
}

TEST(Blocks, Q5_1FifthBitAndMin) {
  BlockQ5_1 b{};
  b.d = fp32_to_fp16(0.5f);
  b.m = fp32_to_fp16(10.0f);
  b.qh[1] = 0x01;  // bit 8 -> element 8
  b.qs[8] = 0xf2;  // element 8: nibble 2 + 16; element 24: nibble 15
  const auto y = dequantize(DType::kQ5_1, b);
  EXPECT_EQ(y[8], 19.0f);   // 18 * 0.5 + 10
  EXPECT_EQ(y[24], 17.5f);  // 15 * 0.5 + 10
  EXPECT_EQ(y[0], 10.0f);
}

TEST(Blocks, Q8_0AndQ8_1) {
  BlockQ8_0 b{};
  b.d = fp32_to_fp16(0.125f);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 127);
  const auto y = dequantize(DType::kQ8_0, b);
  EXPECT_EQ(y[0], -127 * 0.125f);
  EXPECT_EQ(y[31], 121 * 0.125f);
  expect_requantizes<BlockQ8_0>(DType::kQ8_0, y, 0.0f);

  BlockQ8_1 c{};
  c.d = fp32_to_fp16(-0.5f);  // a negative scale flips signs
  c.qs[3] = 4;
  const auto z = dequantize(DType::kQ8_1, c);
  EXPECT_EQ(z[3], -2.0f);
  // The quantizer fills s = d * sum(q).
  std::vector<float> x(32, 1.0f);
  BlockQ8_1 q{};
  quantize_row(DType::kQ8_1, x.data(), &q, 32);
  EXPECT_EQ(q.s, fp32_to_fp16(fp16_to_fp32(q.d) * 127.0f * 32.0f));
}

TEST(Blocks, Q2_KFieldsAndScales) {
  BlockQ2_K b{};
  b.d = fp32_to_fp16(0.5f);
  b.dmin = fp32_to_fp16(0.25f);
  for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<uint8_t>((i & 15) | ((15 - i) << 4));
  b.qs[33] = 0b11100100;  // half 1, l = 1: group g holds code g
  const auto y = dequantize(DType::kQ2_K, b);
  // element 128 + 32g + 1 is in sub-block 8 + 2g: y = 0.5 * sc * g - 0.25 * (15 - sc)
  EXPECT_EQ(y[129], 0.5f * 8 * 0 - 0.25f * 7);
  EXPECT_EQ(y[161], 0.5f * 10 * 1 - 0.25f * 5);
  EXPECT_EQ(y[193], 0.5f * 12 * 2 - 0.25f * 3);
  EXPECT_EQ(y[225], 0.5f * 14 * 3 - 0.25f * 1);
  EXPECT_EQ(y[0], -0.25f * 15);  // code 0 in sub-block 0 (scale 0, min 15)
}

TEST(Blocks, Q3_KScaleUnpackingAndHmask) {
  BlockQ3_K b{};
  b.d = fp32_to_fp16(1.0f);
  // Scale 0: low 4 bits from scales[0] low nibble (1), high 2 bits from scales[8] bits 0-1 (0):
  // 1 - 32 = -31. Scale 8: scales[0] high nibble (2) | scales[8] bits 4-5 (2) << 4 = 34 -> 2.
  // Scale 4: scales[4] low nibble (5) | scales[8] bits 2-3 (1) << 4 = 21 -> -11.
  // Scale 12: scales[4] high nibble (15) | scales[8] bits 6-7 (3) << 4 = 63 -> 31.
  b.scales[0] = 0x21;
  b.scales[4] = 0xf5;
  b.scales[8] = 0b11100100;
  int8_t unpacked[16];
  unpack_scales_q3_k(b.scales, unpacked);
  EXPECT_EQ(unpacked[0], -31);
  EXPECT_EQ(unpacked[4], -11);
  EXPECT_EQ(unpacked[8], 2);
  EXPECT_EQ(unpacked[12], 31);
  EXPECT_EQ(unpacked[1], -32);
  // Element 0 (group 0, sub-block 0): low bits 3, hmask bit 0 set -> q = 3.
  b.qs[0] = 0x03;
  b.hmask[0] = 0x01;
  // Element 64 + 5 (group 2, sub-block 4): qs[5] bits 4-5 = 2, hmask[5] bit 2 clear -> 2 - 4 = -2.
  b.qs[5] = 0x20;
  // Element 128 + 32 + 7 (group 5, sub-block 10): qs[32 + 7] bits 2-3 = 1, hmask[7] bit 5 set -> 1.
  b.qs[39] = 0x04;
  b.hmask[7] = 0x20;
  // Element 192 (group 6, sub-block 12): all bits clear -> -4.
  const auto y = dequantize(DType::kQ3_K, b);
  EXPECT_EQ(y[0], -31.0f * 3);
  EXPECT_EQ(y[69], -11.0f * -2);
  EXPECT_EQ(y[167], static_cast<float>(unpacked[10]) * 1);
  EXPECT_EQ(y[192], 31.0f * -4);
}

TEST(Blocks, Q4_KSixBitScalesAndNibbles) {
  BlockQ4_K b{};
  b.d = fp32_to_fp16(0.5f);
  b.dmin = fp32_to_fp16(0.125f);
  b.scales[0] = 0xc5;  // scale 0 = 5; top bits 3 = high bits of scale 4
  b.scales[4] = 0x47;  // min 0 = 7; top bits 1 = high bits of min 4
  b.scales[8] = 0x9a;  // scale 4 low = 0xa, min 4 low = 9
  uint8_t sc, mn;
  unpack_scale_min_k4(4, b.scales, &sc, &mn);
  EXPECT_EQ(sc, 58);  // 0xa | 3 << 4
  EXPECT_EQ(mn, 25);  // 9 | 1 << 4
  b.qs[2] = 0x9f;   // element 2 (sub-block 0) = 15; element 34 (sub-block 1) = 9
  b.qs[64 + 3] = 0x04;  // element 128 + 3 (sub-block 4) = 4
  const auto y = dequantize(DType::kQ4_K, b);
  EXPECT_EQ(y[2], 0.5f * 5 * 15 - 0.125f * 7);
  EXPECT_EQ(y[131], 0.5f * 58 * 4 - 0.125f * 25);
  EXPECT_EQ(y[34], 0.0f);  // sub-block 1: scale 0 and min 0 (scales[1], scales[5] = 0)
}

TEST(Blocks, Q5_KHighBit) {
  BlockQ5_K b{};
  b.d = fp32_to_fp16(1.0f);
  b.dmin = fp32_to_fp16(1.0f);
  for (int j = 0; j < 4; ++j) b.scales[j] = 1;  // scales 0..3 = 1, mins 0
  b.qs[32 + 6] = 0x20;  // sub-block 2 (low nibble of qs[32 + l]) element 6 -> 0; sub-block 3 -> 2
  b.qh[6] = 0x0c;       // bits 2, 3: high bit for element 6 of sub-blocks 2 and 3
  const auto y = dequantize(DType::kQ5_K, b);
  EXPECT_EQ(y[64 + 6], 16.0f);
  EXPECT_EQ(y[96 + 6], 18.0f);
  EXPECT_EQ(y[6], 0.0f);
}

TEST(Blocks, Q6_KQuartersAndSignedScales) {
  BlockQ6_K b{};
  b.d = fp32_to_fp16(0.5f);
  for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<int8_t>(i - 8);
  for (int i = 0; i < 128; ++i) b.ql[i] = 0x00;
  for (int i = 0; i < 64; ++i) b.qh[i] = 0xaa;  // every high pair = 2 -> q = 32 + low - 32 = low
  // Half 1, l = 5: ql[64 + 5] low -> element 128 + 5, high -> element 128 + 64 + 5;
  // ql[64 + 32 + 5] low -> element 128 + 32 + 5, high -> 128 + 96 + 5.
  b.ql[69] = 0x3a;
  b.ql[101] = 0x7c;
  const auto y = dequantize(DType::kQ6_K, b);
  EXPECT_EQ(y[133], 0.5f * (8 - 8) * 10);   // sub-block 8 has scale 0
  EXPECT_EQ(y[165], 0.5f * (10 - 8) * 12);  // sub-block 10 has scale 2
  EXPECT_EQ(y[197], 0.5f * (12 - 8) * 3);
  EXPECT_EQ(y[229], 0.5f * (14 - 8) * 7);
  EXPECT_EQ(y[0], 0.0f);  // low 0, high 2 -> 0
  b.qh[0] = 0x00;  // element 0: q = 0 - 32, sub-block 0 scale -8
  EXPECT_EQ(dequantize(DType::kQ6_K, b)[0], 0.5f * -8 * -32);
}

TEST(Blocks, Q8_KAndBsums) {
  BlockQ8_K b{};
  b.d = 0.25f;
  b.qs[255] = -128;
  EXPECT_EQ(dequantize(DType::kQ8_K, b)[255], -32.0f);
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  BlockQ8_K q{};
  quantize_row(DType::kQ8_K, x.data(), &q, 256);
  for (int s = 0; s < 16; ++s) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += q.qs[16 * s + l];
    EXPECT_EQ(q.bsums[s], sum);
  }
}

TEST(Blocks, Mxfp4ValueTableAndScale) {
  BlockMXFP4 b{};
  b.e = 127;  // E8M0 2^0: values are the plain E2M1 values
  b.qs[0] = 0x71;  // element 0: code 1 = 0.5; element 16: code 7 = 6
  b.qs[1] = 0xf9;  // element 1: code 9 = -0.5; element 17: code 15 = -6
  b.qs[2] = 0x85;  // element 2: code 5 = 3; element 18: code 8 = -0
  auto y = dequantize(DType::kMXFP4, b);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_EQ(y[16], 6.0f);
  EXPECT_EQ(y[1], -0.5f);
  EXPECT_EQ(y[17], -6.0f);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[18], 0.0f);
  expect_requantizes<BlockMXFP4>(DType::kMXFP4, y, 0.0f);
  b.e = 130;  // 2^3
  EXPECT_EQ(dequantize(DType::kMXFP4, b)[16], 48.0f);
  b.e = 0;  // 2^-127 in E8M0: a float subnormal, not zero
  EXPECT_EQ(dequantize(DType::kMXFP4, b)[0], std::ldexp(1.0f, -128));
}

TEST(Blocks, UnalignedRowsAndBadArguments) {
  // Rows inside GGUF files need not be aligned: convert from an odd address.
  std::vector<uint8_t> storage(1 + 2 * sizeof(BlockQ4_K));
  std::vector<float> x(512);
  for (int i = 0; i < 512; ++i) x[i] = std::sin(static_cast<float>(i));
  quantize_row(DType::kQ4_K, x.data(), storage.data() + 1, 512);
  std::vector<float> y(512);
  dequantize_row(DType::kQ4_K, storage.data() + 1, y.data(), 512);
  for (int i = 0; i < 512; ++i) ASSERT_NEAR(y[i], x[i], 0.1f);
  EXPECT_THROW(dequantize_row(DType::kQ4_K, storage.data(), y.data(), 100), Error);
  EXPECT_THROW(quantize_row(DType::kQ8_0, x.data(), storage.data(), -32), Error);
  EXPECT_THROW(dequantize_row(static_cast<DType>(5), storage.data(), y.data(), 32), Error);
  EXPECT_THROW(quantize_row(DType::kQ8_0, nullptr, storage.data(), 32), Error);
}

}  // namespace
}  // namespace keel::tensor
