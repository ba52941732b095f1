// Internal to the gguf module: how metadata value types map onto Value::data's variant
// alternatives and onto bytes on disk. Shared by the reader, the writer and Value itself
// so the three cannot disagree.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/gguf.h"

namespace keel::gguf::detail {

constexpr bool is_known_value_type(uint32_t code) { return code <= 12; }

// Bytes of one element on disk for fixed-size types; 0 for string and array.
constexpr size_t fixed_size(ValueType t) {
  switch (t) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
    case ValueType::kUint16: case ValueType::kInt16: return 2;
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
    case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
    case ValueType::kString: case ValueType::kArray: return 0;
  }
  return 0;
}

// Smallest number of bytes one element can take on disk: bounds counts before allocating.
constexpr size_t min_disk_size(ValueType t) {
  if (t == ValueType::kString) return 8;  // u64 length
  if (t == ValueType::kArray) return 12;  // u32 element type + u64 count
  return fixed_size(t);
}

// Variant order in Value::data: the 12 scalars in code order without kArray (9), then a
// vector of each in the same order, then the array of arrays.
constexpr size_t scalar_index(ValueType t) {
  auto c = static_cast<size_t>(t);
  return c < 9 ? c : c - 1;
}
constexpr size_t vector_index(ValueType element) { return 12 + scalar_index(element); }
inline constexpr size_t kNestedIndex = 24;

// The alternative a well-formed Value of this type holds.
constexpr size_t expected_index(const Value& v) {
  if (v.type != ValueType::kArray) return scalar_index(v.type);
  if (v.array_type == ValueType::kArray) return kNestedIndex;
  return vector_index(v.array_type);
}

}  // namespace keel::gguf::detail
