#include "gguf/value_io.h"

#include <cstring>

#include "gguf/value_layout.h"

namespace keel::gguf::detail {

namespace {

// Fixed-size elements are copied in one go: the count was bounded already.
template <typename T>
void read_fixed_array(Cursor& in, uint64_t count, Value& out) {
  auto& vec = out.data.template emplace<std::vector<T>>(count);
  if (count) std::memcpy(vec.data(), in.here(), count * sizeof(T));
  in.skip(count * sizeof(T), "array elements");
}

bool read_bool(Cursor& in) {
  size_t at = in.pos();
  uint8_t b = in.read<uint8_t>("bool value");
  if (b > 1) in.fail_at(at, "bool value " + std::to_string(b) + " is not 0 or 1");
  return b == 1;
}

Value read_array(Cursor& in, int depth) {
  size_t at = in.pos();
  uint32_t code = in.read<uint32_t>("array element type");
  if (!is_known_value_type(code)) in.fail_at(at, "unknown array element type " + std::to_string(code));
  auto elem = static_cast<ValueType>(code);
  if (elem == ValueType::kArray && depth + 1 >= kMaxArrayDepth)
    in.fail_at(at, "arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  size_t count_at = in.pos();
  uint64_t count = in.read<uint64_t>("array count");
  // Bound by the bytes left BEFORE allocating: a count of 2^60 in a small file fails here.
  if (count > in.remaining() / min_disk_size(elem))
    in.fail_at(count_at, "array of " + std::to_string(count) + " " + value_type_name(elem) +
                             " elements exceeds the " + std::to_string(in.remaining()) +
                             " bytes that remain");
  Value v;
  v.type = ValueType::kArray;
  v.array_type = elem;
  switch (elem) {
    case ValueType::kUint8: read_fixed_array<uint8_t>(in, count, v); break;
    case ValueType::kInt8: read_fixed_array<int8_t>(in, count, v); break;
    case ValueType::kUint16: read_fixed_array<uint16_t>(in, count, v); break;
    case ValueType::kInt16: read_fixed_array<int16_t>(in, count, v); break;
    case ValueType::kUint32: read_fixed_array<uint32_t>(in, count, v); break;
    case ValueType::kInt32: read_fixed_array<int32_t>(in, count, v); break;
    case ValueType::kFloat32: read_fixed_array<float>(in, count, v); break;
    case ValueType::kUint64: read_fixed_array<uint64_t>(in, count, v); break;
    case ValueType::kInt64: read_fixed_array<int64_t>(in, count, v); break;
    case ValueType::kFloat64: read_fixed_array<double>(in, count, v); break;
    case ValueType::kBool: {
      auto& vec = v.data.emplace<std::vector<bool>>();
      vec.reserve(count);
      for (uint64_t i = 0; i < count; ++i) vec.push_back(read_bool(in));
      break;
    }
    case ValueType::kString: {
      auto& vec = v.data.emplace<std::vector<std::string>>();
      vec.reserve(count);
      for (uint64_t i = 0; i < count; ++i) vec.push_back(in.read_string("string element"));
      break;
    }
    case ValueType::kArray: {
      auto arr = std::make_shared<Array>();
      arr->reserve(count);
      for (uint64_t i = 0; i < count; ++i) arr->push_back(read_array(in, depth + 1));
      v.data = std::move(arr);
      break;
    }
  }
  return v;
}

template <typename T>
void append_raw(std::string& out, const T& x) {
  char buf[sizeof(T)];
  std::memcpy(buf, &x, sizeof(T));
  out.append(buf, sizeof(T));
}

void append_string(std::string& out, const std::string& s) {
  append_raw<uint64_t>(out, s.size());
  out += s;
}

[[noreturn]] void invalid(const std::string& reason) { throw Error(ErrorCode::kInvalidArgument, reason); }

}  // namespace

Value read_value(Cursor& in, ValueType type, int depth) {
  Value v;
  switch (type) {
    case ValueType::kUint8: v.data.emplace<uint8_t>(in.read<uint8_t>("uint8 value")); break;
    case ValueType::kInt8: v.data.emplace<int8_t>(in.read<int8_t>("int8 value")); break;
    case ValueType::kUint16: v.data.emplace<uint16_t>(in.read<uint16_t>("uint16 value")); break;
    case ValueType::kInt16: v.data.emplace<int16_t>(in.read<int16_t>("int16 value")); break;
    case ValueType::kUint32: v.data.emplace<uint32_t>(in.read<uint32_t>("uint32 value")); break;
    case ValueType::kInt32: v.data.emplace<int32_t>(in.read<int32_t>("int32 value")); break;
    case ValueType::kFloat32: v.data.emplace<float>(in.read<float>("float32 value")); break;
    case ValueType::kBool: v.data.emplace<bool>(read_bool(in)); break;
    case ValueType::kString: v.data.emplace<std::string>(in.read_string("string value")); break;
    case ValueType::kUint64: v.data.emplace<uint64_t>(in.read<uint64_t>("uint64 value")); break;
    case ValueType::kInt64: v.data.emplace<int64_t>(in.read<int64_t>("int64 value")); break;
    case ValueType::kFloat64: v.data.emplace<double>(in.read<double>("float64 value")); break;
    case ValueType::kArray: return read_array(in, depth);
  }
  v.type = type;
  return v;
}

void append_value(std::string& out, const Value& v, int depth) {
  if (!is_known_value_type(static_cast<uint32_t>(v.type)) ||
      (v.is_array() && !is_known_value_type(static_cast<uint32_t>(v.array_type))))
    invalid("value has an unknown type code");
  if (v.data.index() != expected_index(v))
    invalid(std::string("value of type ") + value_type_name(v.type) +
            (v.is_array() ? std::string(" of ") + value_type_name(v.array_type) : "") +
            " holds contents of another type");
  if (v.is_array()) {
    append_raw<uint32_t>(out, static_cast<uint32_t>(v.array_type));
    append_raw<uint64_t>(out, v.array_size());
  }
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          append_string(out, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          append_raw<uint8_t>(out, x ? 1 : 0);
        } else if constexpr (std::is_arithmetic_v<T>) {
          append_raw(out, x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          for (const auto& s : x) append_string(out, s);
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          for (bool b : x) append_raw<uint8_t>(out, b ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<Array>>) {
          if (!x) return;
          if (depth + 1 >= kMaxArrayDepth)
            invalid("arrays nested deeper than " + std::to_string(kMaxArrayDepth));
          for (const Value& e : *x) {
            if (!e.is_array()) invalid("an element of an array of arrays is not an array");
            append_value(out, e, depth + 1);
          }
        } else {
          if (!x.empty()) {
            out.append(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(x[0]));
          }
        }
      },
      v.data);
}

}  // namespace keel::gguf::detail
