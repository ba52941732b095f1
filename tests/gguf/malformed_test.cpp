// Hand-built malformed files: each is rejected with keel::Error(kInvalidFile) whose
// message names the file, the byte offset and the reason, without large allocations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "alloc_tracker.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "support/paths.h"

namespace keel::gguf {
namespace {

using test::GgufBytes;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr uint32_t kU32 = 4, kString = 8, kArray = 9, kBool = 7;
constexpr uint32_t kF32 = 0, kQ8_0 = 8;
constexpr size_t kHeader = 24;  // magic, version, two u64 counts

// Parses b as "evil.gguf" and returns the error message; fails the test unless it is a
// kInvalidFile error and the parse allocated little.
std::string error_of(const GgufBytes& b) {
  test::AllocTracker tracker;
  try {
    GgufFile f("evil.gguf", b.bytes);
    ADD_FAILURE() << "parsed without error";
    return "";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
    EXPECT_THAT(e.what(), StartsWith("evil.gguf: offset "));
    EXPECT_LT(tracker.stats().largest_bytes, 64 * 1024) << e.what();
    return e.what();
  }
}

GgufBytes one_key(const std::string& key, uint32_t type) { return GgufBytes().header(3, 0, 1).key(key, type); }

TEST(GgufMalformed, BadMagicAndTinyFiles) {
  GgufBytes b;
  b.raw("GGML", 4).u32(3).u64(0).u64(0);
  EXPECT_EQ(error_of(b), "evil.gguf: offset 0: bad magic 0x4c4d4747, not a GGUF file");
  EXPECT_EQ(error_of(GgufBytes().raw("GG", 2)), "evil.gguf: offset 0: file of 2 bytes is too small for GGUF");
  EXPECT_EQ(error_of(GgufBytes()), "evil.gguf: offset 0: file of 0 bytes is too small for GGUF");
  EXPECT_THAT(error_of(GgufBytes().raw("GGUF", 4).u32(3)), HasSubstr("offset 8: tensor count needs 8 bytes but only 0 remain"));
}

TEST(GgufMalformed, UnsupportedVersions) {
  EXPECT_EQ(error_of(GgufBytes().header(1, 0, 0)), "evil.gguf: offset 4: GGUF version 1 is not supported (only 2 and 3)");
  EXPECT_EQ(error_of(GgufBytes().header(4, 0, 0)), "evil.gguf: offset 4: GGUF version 4 is not supported (only 2 and 3)");
  EXPECT_THAT(error_of(GgufBytes().header(0x03000000, 0, 0)), HasSubstr("(big-endian file?)"));
  GgufFile v2("v2.gguf", GgufBytes().header(2, 0, 0).bytes);  // version 2 has the same layout
  EXPECT_EQ(v2.version(), 2u);
}

TEST(GgufMalformed, HugeCounts) {
  EXPECT_EQ(error_of(GgufBytes().header(3, 1ull << 60, 0).zeros(64)),
            "evil.gguf: offset 8: tensor count 1152921504606846976 exceeds what the 64 remaining bytes can hold");
  EXPECT_EQ(error_of(GgufBytes().header(3, 0, 1ull << 60).zeros(64)),
            "evil.gguf: offset 16: metadata count 1152921504606846976 exceeds what the 64 remaining bytes can hold");
}

TEST(GgufMalformed, HugeStringLength) {
  // key "k" at 24: length (8) + 'k' (1), type (4); the value's length field is at 37.
  GgufBytes b = one_key("k", kString).u64(1ull << 62).zeros(16);
  EXPECT_EQ(error_of(b), "evil.gguf: offset 37: string value length 4611686018427387904 exceeds the 16 bytes that remain");
  GgufBytes key = GgufBytes().header(3, 0, 1).u64(~0ull).zeros(16);
  EXPECT_EQ(error_of(key), "evil.gguf: offset 24: metadata key length 18446744073709551615 exceeds the 16 bytes that remain");
}

TEST(GgufMalformed, HugeArrayCounts) {
  // Element type at 37, count at 41: a 2^60-element array in a ~100-byte file.
  EXPECT_EQ(error_of(one_key("a", kArray).u32(kU32).u64(1ull << 60).zeros(50)),
            "evil.gguf: offset 41: array of 1152921504606846976 uint32 elements exceeds the 50 bytes that remain");
  EXPECT_EQ(error_of(one_key("a", kArray).u32(kString).u64(1ull << 60).zeros(50)),
            "evil.gguf: offset 41: array of 1152921504606846976 string elements exceeds the 50 bytes that remain");
  EXPECT_EQ(error_of(one_key("a", kArray).u32(kArray).u64(1ull << 60).zeros(50)),
            "evil.gguf: offset 41: array of 1152921504606846976 array elements exceeds the 50 bytes that remain");
  // 7 bytes cannot hold 2 uint32 elements: the bound is exact, not approximate.
  EXPECT_THAT(error_of(one_key("a", kArray).u32(kU32).u64(2).zeros(7)), HasSubstr("offset 41: array of 2 uint32"));
  // A string inside an array with a huge length.
  EXPECT_THAT(error_of(one_key("a", kArray).u32(kString).u64(1).u64(1ull << 40).zeros(8)),
              HasSubstr("offset 49: string element length 1099511627776 exceeds the 8 bytes that remain"));
}

TEST(GgufMalformed, UnknownValueTypes) {
  EXPECT_EQ(error_of(one_key("k", 13).zeros(16)), "evil.gguf: offset 33: key 'k': unknown value type 13");
  EXPECT_EQ(error_of(one_key("a", kArray).u32(13).u64(1).zeros(16)),
            "evil.gguf: offset 37: unknown array element type 13");
}

TEST(GgufMalformed, BadValues) {
  EXPECT_EQ(error_of(one_key("b", kBool).u8(2).zeros(16)), "evil.gguf: offset 37: bool value 2 is not 0 or 1");
  EXPECT_EQ(error_of(GgufBytes().header(3, 0, 1).str("").u32(kU32).u32(1).zeros(8)),
            "evil.gguf: offset 24: empty metadata key");
  // Arrays nested deeper than kMaxArrayDepth.
  GgufBytes deep = one_key("d", kArray);
  for (int i = 0; i < kMaxArrayDepth; ++i) deep.u32(kArray).u64(1);
  deep.u32(kU32).u64(0).zeros(16);
  EXPECT_THAT(error_of(deep), HasSubstr("arrays nested deeper than 8"));
}

TEST(GgufMalformed, DuplicateKey) {
  GgufBytes b = GgufBytes().header(3, 0, 2);
  b.key("k", kU32).u32(1);
  size_t second = b.size();
  b.key("k", kU32).u32(2);
  EXPECT_EQ(error_of(b), "evil.gguf: offset " + std::to_string(second) + ": duplicate key 'k'");
}

TEST(GgufMalformed, Alignment) {
  EXPECT_EQ(error_of(one_key("general.alignment", kU32).u32(48)),
            "evil.gguf: offset 49: general.alignment 48 is not a power of two");
  EXPECT_EQ(error_of(one_key("general.alignment", kU32).u32(0)),
            "evil.gguf: offset 49: general.alignment 0 is not a power of two");
  EXPECT_EQ(error_of(one_key("general.alignment", kString).str("32")),
            "evil.gguf: offset 49: general.alignment must be uint32, not string");
}

// One tensor "t" at 24: name length (8) + 't' (1) → n_dims at 33, dims from 37.
GgufBytes one_tensor(const std::vector<uint64_t>& dims, uint32_t type, uint64_t offset) {
  return GgufBytes().header(3, 1, 0).tensor("t", dims, type, offset);
}

TEST(GgufMalformed, TensorShapes) {
  EXPECT_EQ(error_of(GgufBytes().header(3, 1, 0).str("t").u32(100).zeros(64)),
            "evil.gguf: offset 33: tensor 't': n_dims 100 is outside 1..4");
  EXPECT_EQ(error_of(GgufBytes().header(3, 1, 0).str("t").u32(0).zeros(64)),
            "evil.gguf: offset 33: tensor 't': n_dims 0 is outside 1..4");
  EXPECT_EQ(error_of(one_tensor({1ull << 32, 1ull << 32}, kF32, 0).zeros(64)),
            "evil.gguf: offset 45: tensor 't': element count overflows at dimension 1");
  EXPECT_EQ(error_of(one_tensor({1ull << 63}, kF32, 0).zeros(64)),
            "evil.gguf: offset 37: tensor 't': dimension 0 is 9223372036854775808");
  EXPECT_EQ(error_of(one_tensor({4, 0}, kF32, 0).zeros(64)), "evil.gguf: offset 45: tensor 't': dimension 1 is 0");
  EXPECT_EQ(error_of(one_tensor({33}, kQ8_0, 0).zeros(64)),
            "evil.gguf: offset 33: tensor 't': row length 33 is not a multiple of the q8_0 block size 32");
  // 2^62 f32 elements: the element count fits int64 but the byte size does not fit u64.
  EXPECT_EQ(error_of(one_tensor({1ull << 31, 1ull << 31}, kF32, 0).zeros(64)),
            "evil.gguf: offset 33: tensor 't': byte size overflows");
  EXPECT_EQ(error_of(GgufBytes().header(3, 1, 0).str("").u32(1).u64(1).u32(0).u64(0).zeros(32)),
            "evil.gguf: offset 24: empty tensor name");
}

TEST(GgufMalformed, UnknownTensorType) {
  EXPECT_EQ(error_of(one_tensor({4}, 4, 0).zeros(64)), "evil.gguf: offset 45: tensor 't': unknown tensor type 4");
  EXPECT_EQ(error_of(one_tensor({4}, 1000, 0).zeros(64)), "evil.gguf: offset 45: tensor 't': unknown tensor type 1000");
}

TEST(GgufMalformed, TensorData) {
  // Data past the end: 8 f32 need 32 bytes, the data section holds 16.
  EXPECT_EQ(error_of(one_tensor({8}, kF32, 0).pad_to(32).zeros(16)),
            "evil.gguf: offset 24: tensor 't': data [0, +32) runs past the end of the file (data section holds 16 bytes)");
  EXPECT_THAT(error_of(one_tensor({8}, kF32, ~0ull - 31).pad_to(32).zeros(64)), HasSubstr("runs past the end"));
  // Misaligned.
  EXPECT_EQ(error_of(one_tensor({1}, kF32, 4).pad_to(32).zeros(64)),
            "evil.gguf: offset 24: tensor 't': data offset 4 is not a multiple of the alignment 32");
  // The data section itself starting past the end of the file.
  GgufBytes cut = one_tensor({1}, kF32, 0);
  EXPECT_THAT(error_of(cut), HasSubstr("data section at 64 starts past the end of the file (57 bytes)"));
  // Overlapping: a = [0, 64), b starts at 32.
  GgufBytes b = GgufBytes().header(3, 2, 0).tensor("a", {16}, kF32, 0);
  size_t b_at = b.size();
  b.tensor("b", {8}, kF32, 32).pad_to(32).zeros(128);
  EXPECT_EQ(error_of(b), "evil.gguf: offset " + std::to_string(b_at) + ": tensor 'b': data at 32 overlaps tensor 'a' [0, 64)");
  // Duplicate names.
  GgufBytes d = GgufBytes().header(3, 2, 0).tensor("a", {8}, kF32, 0);
  size_t d_at = d.size();
  d.tensor("a", {8}, kF32, 32).pad_to(32).zeros(64);
  EXPECT_EQ(error_of(d), "evil.gguf: offset " + std::to_string(d_at) + ": duplicate tensor name 'a'");
}

TEST(GgufMalformed, WellFormedHandBuiltFileParses) {
  // The same builder makes a valid file, so the errors above are about the one bad field.
  GgufBytes b = GgufBytes().header(3, 2, 2);
  b.key("general.alignment", kU32).u32(64).key("s", kString).str("x");
  b.tensor("a", {16}, kF32, 0).tensor("b", {32, 2}, kQ8_0, 64).pad_to(64);
  size_t data_at = b.size();
  b.zeros(64 + 68);
  GgufFile f("ok.gguf", b.bytes);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset(), data_at);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[1].n_bytes, 68u);
  EXPECT_EQ(f.tensors()[1].data, f.tensors()[0].data + 64);
  EXPECT_EQ(f.tensors()[1].n_elements(), 64);
  // Borrowing parses the same bytes in place.
  GgufFile g = GgufFile::borrowing("ok.gguf", b.bytes);
  EXPECT_EQ(g.tensors()[1].data, b.bytes.data() + data_at + 64);
  EXPECT_TRUE(g.metadata()[1].second == f.metadata()[1].second);
}

TEST(GgufMalformed, FilesOnDiskNameThePath) {
  const std::string path = test::temp_dir() + "/bad.gguf";
  {
    GgufBytes b = GgufBytes().header(7, 0, 0);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.bytes.data()), b.size());
  }
  try {
    GgufFile f(path);
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_EQ(std::string(e.what()), path + ": offset 4: GGUF version 7 is not supported (only 2 and 3)");
  }
  try {
    GgufFile f(test::temp_dir() + "/missing.gguf");
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

TEST(GgufMalformed, GettersNameTheKey) {
  GgufBytes b = one_key("n", kString).str("five");
  GgufFile f("m.gguf", b.bytes);
  try {
    f.get_int("n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_THAT(e.what(), HasSubstr("m.gguf: key 'n': value of type string is not an int64"));
  }
  try {
    f.get_float("absent");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("missing metadata key 'absent'"));
  }
  EXPECT_EQ(f.get_int_or("absent", 7), 7);
  EXPECT_EQ(f.get_string_or("n", "d"), "five");
  EXPECT_THROW(f.get_bool_or("n", false), Error);
}

}  // namespace
}  // namespace keel::gguf
