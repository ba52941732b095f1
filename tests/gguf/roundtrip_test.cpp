// Writer → reader round trips: every value type, arrays (empty, of strings, nested),
// unicode keys, tensors of several types and alignments, streaming fills.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "gguf/gguf.h"
#include "support/paths.h"
#include "tensor/types.h"

namespace keel::gguf {
namespace {

using ::testing::HasSubstr;
using tensor::DType;

std::string temp_path(const std::string& name) { return test::temp_dir() + "/" + name; }

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 131 + (i >> 8));
  return v;
}

std::vector<std::pair<std::string, Value>> every_value_type() {
  Array nested;
  nested.push_back(Value::array<int32_t>({1, -2, 3}));
  nested.push_back(Value::array<std::string>({"a", "", "ü"}));
  nested.push_back(Value::array<float>({}));
  nested.push_back(Value::array_of_arrays({Value::array<uint8_t>({7})}));
  return {
      {"t.u8", Value::u8(250)},
      {"t.i8", Value::i8(-120)},
      {"t.u16", Value::u16(65000)},
      {"t.i16", Value::i16(-32000)},
      {"t.u32", Value::u32(4000000000u)},
      {"t.i32", Value::i32(-2000000000)},
      {"t.f32", Value::f32(3.25f)},
      {"t.f32.nan", Value::f32(std::numeric_limits<float>::quiet_NaN())},
      {"t.bool.true", Value::boolean(true)},
      {"t.bool.false", Value::boolean(false)},
      {"t.str", Value::str("hello\nworld")},
      {"t.str.empty", Value::str("")},
      {"t.str.nul", Value::str(std::string("a\0b", 3))},
      {"t.u64", Value::u64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", Value::i64(std::numeric_limits<int64_t>::min())},
      {"t.f64", Value::f64(-1.0e300)},
      {"a.u8", Value::array<uint8_t>({0, 1, 255})},
      {"a.i8", Value::array<int8_t>({-128, 0, 127})},
      {"a.u16", Value::array<uint16_t>({1, 65535})},
      {"a.i16", Value::array<int16_t>({-1, 2})},
      {"a.u32", Value::array<uint32_t>({0xFFFFFFFFu})},
      {"a.i32", Value::array<int32_t>({-5, 6, 7})},
      {"a.f32", Value::array<float>({1.5f, -0.0f, std::numeric_limits<float>::infinity()})},
      {"a.bool", Value::array<bool>({true, false, true})},
      {"a.str", Value::array<std::string>({"<s>", "▁the", "", "日本語"})},
      {"a.u64", Value::array<uint64_t>({1, 2})},
      {"a.i64", Value::array<int64_t>({-1})},
      {"a.f64", Value::array<double>({0.1, 0.2})},
      {"a.empty.u32", Value::array<uint32_t>({})},
      {"a.empty.str", Value::array<std::string>({})},
      {"a.empty.arr", Value::array_of_arrays({})},
      {"a.nested", Value::array_of_arrays(nested)},
      {"ключ.日本.🙂", Value::str("unicode key")},
  };
}

TEST(GgufRoundTrip, EveryValueTypeReadsBackIdentical) {
  GgufWriter w;
  auto kvs = every_value_type();
  for (const auto& [k, v] : kvs) w.set(k, v);
  const std::string path = temp_path("values.gguf");
  w.write(path);

  GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_TRUE(f.tensors().empty());
  ASSERT_EQ(f.metadata().size(), kvs.size());
  for (size_t i = 0; i < kvs.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].first, kvs[i].first);  // file order kept
    EXPECT_TRUE(f.metadata()[i].second == kvs[i].second) << kvs[i].first << ": " << f.metadata()[i].second.to_string();
  }
  EXPECT_EQ(f.find("a.str")->as_array<std::string>()[3], "日本語");
  EXPECT_EQ(f.find("a.nested")->array_size(), 4u);
  EXPECT_EQ(f.get_string("ключ.日本.🙂"), "unicode key");
}

TEST(GgufRoundTrip, SetReplacesKeepingOrder) {
  GgufWriter w;
  w.set("a", Value::u32(1));
  w.set("b", Value::u32(2));
  w.set("a", Value::str("x"));
  const std::string path = temp_path("replace.gguf");
  w.write(path);
  GgufFile f(path);
  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(f.metadata()[0].first, "a");
  EXPECT_EQ(f.get_string("a"), "x");
  EXPECT_EQ(f.get_int("b"), 2);
}

TEST(GgufRoundTrip, TensorsKeepBytesShapesAndAlignment) {
  for (uint32_t alignment : {0u, 1u, 32u, 64u, 4096u}) {  // 0: default, not written
    GgufWriter w;
    if (alignment) w.set("general.alignment", Value::u32(alignment));
    struct Spec { std::string name; DType type; std::vector<int64_t> shape; };
    std::vector<Spec> specs = {
        {"f32.odd", DType::kF32, {7, 3}},
        {"f16.vec", DType::kF16, {5}},
        {"q8_0", DType::kQ8_0, {64, 3, 2}},
        {"q4_K", DType::kQ4_K, {256, 2}},
        {"bf16.4d", DType::kBF16, {3, 1, 2, 2}},
    };
    std::vector<std::vector<uint8_t>> datas;
    for (size_t i = 0; i < specs.size(); ++i) {
      int64_t rows = 1;
      for (size_t d = 1; d < specs[i].shape.size(); ++d) rows *= specs[i].shape[d];
      datas.push_back(pattern(tensor::row_bytes(specs[i].type, specs[i].shape[0]) * rows, uint8_t(i)));
      w.add_tensor(specs[i].name, specs[i].type, specs[i].shape, datas.back());
    }
    const std::string path = temp_path("tensors.gguf");
    w.write(path);

    GgufFile f(path);
    const uint64_t a = alignment ? alignment : kDefaultAlignment;
    EXPECT_EQ(f.alignment(), a);
    EXPECT_EQ(f.data_offset() % a, 0u);
    ASSERT_EQ(f.tensors().size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const TensorInfo& t = f.tensors()[i];
      EXPECT_EQ(t.name, specs[i].name);
      EXPECT_EQ(t.type, specs[i].type);
      EXPECT_EQ(t.shape, specs[i].shape);
      EXPECT_EQ(t.offset % a, 0u);
      ASSERT_EQ(t.n_bytes, datas[i].size());
      EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.n_bytes), datas[i]) << t.name;
      EXPECT_EQ(f.find_tensor(specs[i].name), &t);
    }
    EXPECT_EQ(f.find_tensor("absent"), nullptr);
  }
}

TEST(GgufRoundTrip, StreamingFillIsCalledPerTensorAtWriteTime) {
  GgufWriter w;
  int calls = 0;
  w.add_tensor("a", DType::kF32, {4, 2}, [&](uint8_t* dst, size_t n) {
    ++calls;
    ASSERT_EQ(n, 32u);
    for (size_t i = 0; i < n; ++i) dst[i] = uint8_t(i);
  });
  w.add_tensor("b", DType::kI32, {3}, std::vector<uint8_t>(12, 9));
  EXPECT_EQ(calls, 0);
  const std::string path = temp_path("stream.gguf");
  w.write(path);
  EXPECT_EQ(calls, 1);
  GgufFile f(path);
  EXPECT_EQ(f.find_tensor("a")->data[31], 31);
  EXPECT_EQ(f.find_tensor("b")->data[11], 9);
}

TEST(GgufRoundTrip, FailedWriteLeavesNoFile) {
  GgufWriter w;
  w.add_tensor("a", DType::kF32, {4}, [](uint8_t*, size_t) {
    throw Error(ErrorCode::kInternal, "fill failed");
  });
  const std::string dir = test::temp_dir() + "/failed";
  std::filesystem::create_directories(dir);
  EXPECT_THROW(w.write(dir + "/x.gguf"), Error);
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // neither the file nor a temporary

  GgufWriter ok;
  try {
    ok.write(test::temp_dir() + "/no-such-dir/x.gguf");
    FAIL() << "write into a missing directory succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_THAT(e.what(), HasSubstr("no-such-dir/x.gguf"));
  }
}

TEST(GgufRoundTrip, WriterRejectsBadInput) {
  GgufWriter w;
  auto expect_invalid = [](auto&& fn, const std::string& what) {
    try {
      fn();
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_THAT(e.what(), HasSubstr(what));
    }
  };
  w.add_tensor("t", DType::kF32, {2}, std::vector<uint8_t>(8));
  expect_invalid([&] { w.add_tensor("t", DType::kF32, {2}, std::vector<uint8_t>(8)); }, "duplicate tensor name 't'");
  expect_invalid([&] { w.add_tensor("s", DType::kF32, {2}, std::vector<uint8_t>(7)); }, "holds 7 bytes");
  expect_invalid([&] { w.add_tensor("s", DType::kF32, {}, std::vector<uint8_t>(4)); }, "0 dimensions");
  expect_invalid([&] { w.add_tensor("s", DType::kF32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)); }, "5 dimensions");
  expect_invalid([&] { w.add_tensor("s", DType::kF32, {2, 0}, std::vector<uint8_t>(0)); }, "dimension 1 is 0");
  expect_invalid([&] { w.add_tensor("s", DType::kQ8_0, {33}, std::vector<uint8_t>(34)); }, "");
  expect_invalid([&] { w.add_tensor("s", DType::kF32, {1 << 30, 1 << 30, 1 << 30}, [](uint8_t*, size_t) {}); },
                 "overflows");
  expect_invalid([&] { w.set("general.alignment", Value::u32(48)); }, "not a power of two");
  expect_invalid([&] { w.set("general.alignment", Value::u64(64)); }, "must be a uint32");
  EXPECT_EQ(w.tensor_count(), 1u);  // failed adds left nothing behind

  Value broken = Value::u32(5);
  broken.type = ValueType::kString;  // claims string, holds a uint32
  w.set("broken", broken);
  expect_invalid([&] { w.write(temp_path("broken.gguf")); }, "key 'broken'");
}

TEST(GgufRoundTrip, DeeplyNestedArraysAreBounded) {
  Value v = Value::array<uint8_t>({1});
  for (int depth = 1; depth < kMaxArrayDepth; ++depth) v = Value::array_of_arrays({v});
  GgufWriter w;
  w.set("deep", v);  // kMaxArrayDepth levels: allowed
  w.write(temp_path("deep.gguf"));
  GgufFile f(temp_path("deep.gguf"));
  EXPECT_TRUE(*f.find("deep") == v);

  w.set("deep", Value::array_of_arrays({v}));
  EXPECT_THROW(w.write(temp_path("deeper.gguf")), Error);
}

}  // namespace
}  // namespace keel::gguf
