// Value: checked conversions, typed array access, equality and printing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "gguf/gguf.h"

namespace keel::gguf {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    return e.what();
  }
  return "(no error)";
}

TEST(GgufValue, IntegerConversionsAreRangeChecked) {
  EXPECT_EQ(Value::u8(200).as_int(), 200);
  EXPECT_EQ(Value::i8(-3).as_int(), -3);
  EXPECT_EQ(Value::u32(0xFFFFFFFFu).as_int(), 4294967295);
  EXPECT_EQ(Value::i64(-7).as_int(), -7);
  EXPECT_EQ(Value::u64(std::numeric_limits<uint64_t>::max()).as_uint(), std::numeric_limits<uint64_t>::max());
  EXPECT_THAT(error_of([] { Value::u64(std::numeric_limits<uint64_t>::max()).as_int(); }), HasSubstr("does not fit"));
  EXPECT_THAT(error_of([] { Value::i32(-1).as_uint(); }), HasSubstr("does not fit"));
  EXPECT_EQ(Value::f32(4.0f).as_int(), 4);  // an exact integer in a float converts
  EXPECT_THAT(error_of([] { Value::f32(4.5f).as_int(); }), HasSubstr("is not an int64"));
  EXPECT_THAT(error_of([] { Value::f64(1e30).as_int(); }), HasSubstr("is not an int64"));
  EXPECT_THAT(error_of([] { Value::f64(NAN).as_int(); }), HasSubstr("is not an int64"));
  EXPECT_THAT(error_of([] { Value::str("5").as_int(); }), HasSubstr("string"));
  EXPECT_THAT(error_of([] { Value::boolean(true).as_int(); }), HasSubstr("bool"));
  EXPECT_THAT(error_of([] { Value::array<int32_t>({1}).as_int(); }), HasSubstr("array of int32"));
}

TEST(GgufValue, OtherAccessors) {
  EXPECT_DOUBLE_EQ(Value::i16(-2).as_float(), -2.0);
  EXPECT_DOUBLE_EQ(Value::f32(0.5f).as_float(), 0.5);
  EXPECT_THAT(error_of([] { Value::str("x").as_float(); }), HasSubstr("not a number"));
  EXPECT_TRUE(Value::boolean(true).as_bool());
  EXPECT_THAT(error_of([] { Value::u8(1).as_bool(); }), HasSubstr("not a bool"));
  EXPECT_EQ(Value::str("abc").as_string(), "abc");
  EXPECT_THAT(error_of([] { Value::u8(1).as_string(); }), HasSubstr("not a string"));

  Value a = Value::array<uint32_t>({1, 2, 0xFFFFFFFFu});
  EXPECT_EQ(a.array_size(), 3u);
  EXPECT_EQ(Value::u8(1).array_size(), 0u);
  EXPECT_EQ(a.as_array<uint32_t>()[2], 0xFFFFFFFFu);
  EXPECT_THAT(error_of([&] { a.as_array<int32_t>(); }), HasSubstr("not an array of int32"));
  EXPECT_EQ(a.as_int_array(), (std::vector<int64_t>{1, 2, 4294967295}));
  EXPECT_EQ(Value::array<float>({1.5f}).as_float_array(), std::vector<double>{1.5});
  EXPECT_THAT(error_of([] { Value::array<float>({1.5f}).as_int_array(); }), HasSubstr("not an array of integers"));
  EXPECT_THAT(error_of([] { Value::array<uint64_t>({~0ull}).as_int_array(); }), HasSubstr("does not fit"));
  EXPECT_THAT(error_of([] { Value::array<std::string>({"a"}).as_float_array(); }), HasSubstr("not an array of numbers"));
}

TEST(GgufValue, EqualityIsDeepAndBitwise) {
  EXPECT_TRUE(Value::u32(1) == Value::u32(1));
  EXPECT_FALSE(Value::u32(1) == Value::i32(1));
  EXPECT_FALSE(Value::u32(1) == Value::u32(2));
  EXPECT_TRUE(Value::f32(NAN) == Value::f32(NAN));
  EXPECT_FALSE(Value::f32(0.0f) == Value::f32(-0.0f));
  EXPECT_FALSE(Value::array<int32_t>({}) == Value::array<uint32_t>({}));
  EXPECT_TRUE(Value::array_of_arrays({Value::array<std::string>({"x"})}) ==
              Value::array_of_arrays({Value::array<std::string>({"x"})}));
  EXPECT_FALSE(Value::array_of_arrays({Value::array<std::string>({"x"})}) ==
               Value::array_of_arrays({Value::array<std::string>({"y"})}));
}

TEST(GgufValue, ToStringSummarizesLongArrays) {
  EXPECT_EQ(Value::i8(-5).to_string(), "-5");
  EXPECT_EQ(Value::u8(200).to_string(), "200");
  EXPECT_EQ(Value::boolean(false).to_string(), "false");
  EXPECT_EQ(Value::str("a\"b\n").to_string(), "\"a\\\"b\\x0a\"");
  EXPECT_EQ(Value::f32(0.5f).to_string(), "0.5");
  std::vector<int32_t> many(100, 7);
  EXPECT_EQ(Value::array<int32_t>(many).to_string(3), "[7, 7, 7, ... (100 items)]");
  EXPECT_EQ(Value::array<std::string>({"x", "y"}).to_string(), "[\"x\", \"y\"]");
  EXPECT_EQ(Value::array_of_arrays({Value::array<bool>({true})}).to_string(), "[[true]]");
}

}  // namespace
}  // namespace keel::gguf
