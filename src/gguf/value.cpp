// Value: constructors, checked accessors, equality and printing.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/value_layout.h"

namespace keel::gguf {

namespace {

using Data = decltype(Value::data);
template <ValueType T>
using ScalarOf = std::variant_alternative_t<detail::scalar_index(T), Data>;
static_assert(std::is_same_v<ScalarOf<ValueType::kBool>, bool>);
static_assert(std::is_same_v<ScalarOf<ValueType::kString>, std::string>);
static_assert(std::is_same_v<ScalarOf<ValueType::kUint64>, uint64_t>);
static_assert(std::is_same_v<ScalarOf<ValueType::kFloat64>, double>);
static_assert(std::is_same_v<std::variant_alternative_t<detail::vector_index(ValueType::kFloat64), Data>,
                             std::vector<double>>);
static_assert(std::is_same_v<std::variant_alternative_t<detail::kNestedIndex, Data>,
                             std::shared_ptr<Array>>);

// The ValueType code of a C++ element type.
template <typename T> constexpr ValueType type_of();
template <> constexpr ValueType type_of<uint8_t>() { return ValueType::kUint8; }
template <> constexpr ValueType type_of<int8_t>() { return ValueType::kInt8; }
template <> constexpr ValueType type_of<uint16_t>() { return ValueType::kUint16; }
template <> constexpr ValueType type_of<int16_t>() { return ValueType::kInt16; }
template <> constexpr ValueType type_of<uint32_t>() { return ValueType::kUint32; }
template <> constexpr ValueType type_of<int32_t>() { return ValueType::kInt32; }
template <> constexpr ValueType type_of<float>() { return ValueType::kFloat32; }
template <> constexpr ValueType type_of<bool>() { return ValueType::kBool; }
template <> constexpr ValueType type_of<std::string>() { return ValueType::kString; }
template <> constexpr ValueType type_of<uint64_t>() { return ValueType::kUint64; }
template <> constexpr ValueType type_of<int64_t>() { return ValueType::kInt64; }
template <> constexpr ValueType type_of<double>() { return ValueType::kFloat64; }

template <typename T>
Value scalar(T v) {
  Value out;
  out.type = type_of<T>();
  out.data.template emplace<T>(std::move(v));
  return out;
}

[[noreturn]] void bad(const std::string& reason) { throw Error(ErrorCode::kInvalidFile, reason); }

std::string describe(const Value& v) {
  if (!v.is_array()) return value_type_name(v.type);
  return std::string("array of ") + value_type_name(v.array_type);
}

// Converts any integer scalar to int64/uint64 with a range check.
template <typename Out>
Out integer_of(const Value& v, const char* what) {
  return std::visit(
      [&](const auto& x) -> Out {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (!std::in_range<Out>(x)) bad("value " + std::to_string(x) + " does not fit in " + what);
          return static_cast<Out>(x);
        } else if constexpr (std::is_floating_point_v<T>) {
          // A float holding an exact integer converts; anything else is a type error.
          double d = static_cast<double>(x);
          const double lo = static_cast<double>(std::numeric_limits<Out>::min());
          const double hi = std::ldexp(1.0, std::numeric_limits<Out>::digits);
          if (!(d >= lo && d < hi) || std::trunc(d) != d)
            bad("value " + std::to_string(d) + " is not " + what);
          return static_cast<Out>(d);
        } else {
          bad("value of type " + describe(v) + " is not " + what);
        }
      },
      v.data);
}

// An array of numbers converted element by element to Out (int64: integers only, range
// checked; double: any number).
template <typename Out>
std::vector<Out> converted_array(const Value& v, const char* kind) {
  std::vector<Out> out;
  bool ok = v.is_array() && std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>) {
          using E = typename T::value_type;
          constexpr bool integral = std::is_integral_v<E> && !std::is_same_v<E, bool>;
          if constexpr (integral || (std::is_floating_point_v<E> && std::is_floating_point_v<Out>)) {
            out.reserve(x.size());
            for (E e : x) {
              if constexpr (std::is_integral_v<Out>) {
                if (!std::in_range<Out>(e)) bad("array element " + std::to_string(e) + " does not fit in an int64");
              }
              out.push_back(static_cast<Out>(e));
            }
            return true;
          }
        }
        return false;
      },
      v.data);
  if (!ok) bad("value of type " + describe(v) + " is not an array of " + kind);
  return out;
}

template <typename T>
bool bits_equal(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, float>) return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
  else if constexpr (std::is_same_v<T, double>) return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
  else return a == b;
}

template <typename T>
std::string item_text(const T& x) {
  if constexpr (std::is_same_v<T, std::string>) {
    std::string out = "\"";
    for (unsigned char c : x) {
      if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
      else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      } else out += static_cast<char>(c);
    }
    return out + "\"";
  } else if constexpr (std::is_same_v<T, bool>) {
    return x ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream os;
    os.precision(std::is_same_v<T, float> ? 9 : 17);
    os << x;
    return os.str();
  } else {
    return std::to_string(+x);  // + promotes int8/uint8 so they print as numbers
  }
}

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

Value Value::u8(uint8_t v) { return scalar(v); }
Value Value::i8(int8_t v) { return scalar(v); }
Value Value::u16(uint16_t v) { return scalar(v); }
Value Value::i16(int16_t v) { return scalar(v); }
Value Value::u32(uint32_t v) { return scalar(v); }
Value Value::i32(int32_t v) { return scalar(v); }
Value Value::f32(float v) { return scalar(v); }
Value Value::boolean(bool v) { return scalar(v); }
Value Value::str(std::string v) { return scalar(std::move(v)); }
Value Value::u64(uint64_t v) { return scalar(v); }
Value Value::i64(int64_t v) { return scalar(v); }
Value Value::f64(double v) { return scalar(v); }

template <typename T>
Value Value::array(std::vector<T> v) {
  Value out;
  out.type = ValueType::kArray;
  out.array_type = type_of<T>();
  out.data.template emplace<std::vector<T>>(std::move(v));
  return out;
}

Value Value::array_of_arrays(Array v) {
  Value out;
  out.type = ValueType::kArray;
  out.array_type = ValueType::kArray;
  out.data = std::make_shared<Array>(std::move(v));
  return out;
}

size_t Value::array_size() const {
  if (!is_array()) return 0;
  return std::visit(
      [](const auto& x) -> size_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<Array>>) return x ? x->size() : 0;
        else if constexpr (requires { x.size(); } && !std::is_same_v<T, std::string>) return x.size();
        else return 0;
      },
      data);
}

int64_t Value::as_int() const { return integer_of<int64_t>(*this, "an int64"); }
uint64_t Value::as_uint() const { return integer_of<uint64_t>(*this, "a uint64"); }

double Value::as_float() const {
  return std::visit(
      [&](const auto& x) -> double {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) return static_cast<double>(x);
        else bad("value of type " + describe(*this) + " is not a number");
      },
      data);
}

bool Value::as_bool() const {
  if (const bool* b = std::get_if<bool>(&data); b && type == ValueType::kBool) return *b;
  bad("value of type " + describe(*this) + " is not a bool");
}

const std::string& Value::as_string() const {
  if (const auto* s = std::get_if<std::string>(&data); s && type == ValueType::kString) return *s;
  bad("value of type " + describe(*this) + " is not a string");
}

template <typename T>
const std::vector<T>& Value::as_array() const {
  if (const auto* a = std::get_if<std::vector<T>>(&data); a && is_array() && array_type == type_of<T>())
    return *a;
  bad("value of type " + describe(*this) + " is not an array of " + value_type_name(type_of<T>()));
}

std::vector<int64_t> Value::as_int_array() const {
  return converted_array<int64_t>(*this, "integers");
}

std::vector<double> Value::as_float_array() const {
  return converted_array<double>(*this, "numbers");
}

bool Value::operator==(const Value& other) const {
  if (type != other.type || data.index() != other.data.index()) return false;
  if (is_array() && array_type != other.array_type) return false;
  return std::visit(
      [&](const auto& a) -> bool {
        using T = std::decay_t<decltype(a)>;
        const T& b = std::get<T>(other.data);
        if constexpr (std::is_same_v<T, std::shared_ptr<Array>>) {
          size_t na = a ? a->size() : 0, nb = b ? b->size() : 0;
          if (na != nb) return false;
          for (size_t i = 0; i < na; ++i)
            if (!((*a)[i] == (*b)[i])) return false;
          return true;
        } else if constexpr (std::is_same_v<T, std::vector<float>> || std::is_same_v<T, std::vector<double>>) {
          if (a.size() != b.size()) return false;
          for (size_t i = 0; i < a.size(); ++i)
            if (!bits_equal(a[i], b[i])) return false;
          return true;
        } else {
          return bits_equal(a, b);
        }
      },
      data);
}

std::string Value::to_string(size_t max_items) const {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<Array>>) {
          std::string out = "[";
          size_t n = x ? x->size() : 0;
          for (size_t i = 0; i < n && i < max_items; ++i) out += (i ? ", " : "") + (*x)[i].to_string(max_items);
          if (n > max_items) out += ", ... (" + std::to_string(n) + " items)";
          return out + "]";
        } else if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>) {
          std::string out = "[";
          for (size_t i = 0; i < x.size() && i < max_items; ++i) {
            if (i) out += ", ";
            out += item_text<typename T::value_type>(x[i]);
          }
          if (x.size() > max_items) out += ", ... (" + std::to_string(x.size()) + " items)";
          return out + "]";
        } else {
          return item_text(x);
        }
      },
      data);
}

#define KEEL_GGUF_INSTANTIATE(T)                          \
  template Value Value::array<T>(std::vector<T>);         \
  template const std::vector<T>& Value::as_array<T>() const;
KEEL_GGUF_INSTANTIATE(uint8_t)
KEEL_GGUF_INSTANTIATE(int8_t)
KEEL_GGUF_INSTANTIATE(uint16_t)
KEEL_GGUF_INSTANTIATE(int16_t)
KEEL_GGUF_INSTANTIATE(uint32_t)
KEEL_GGUF_INSTANTIATE(int32_t)
KEEL_GGUF_INSTANTIATE(float)
KEEL_GGUF_INSTANTIATE(bool)
KEEL_GGUF_INSTANTIATE(std::string)
KEEL_GGUF_INSTANTIATE(uint64_t)
KEEL_GGUF_INSTANTIATE(int64_t)
KEEL_GGUF_INSTANTIATE(double)
#undef KEEL_GGUF_INSTANTIATE

}  // namespace keel::gguf
