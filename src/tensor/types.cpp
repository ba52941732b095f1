// Type table: GGUF's block sizes and byte sizes per DType, names, and row sizes.
#include "tensor/types.h"

#include <array>
#include <cctype>
#include <limits>

#include "core/error.h"

namespace keel::tensor {
namespace {

struct Entry {
  DType type;
  TypeTraits traits;
};

// Block sizes and bytes are GGUF's (ggml's type_traits); see tensor/blocks.h for layouts.
constexpr std::array<Entry, 21> kTable = {{
    {DType::kF32, {"f32", 1, 4, true, true}},
    {DType::kF16, {"f16", 1, 2, true, true}},
    {DType::kQ4_0, {"q4_0", 32, 18, true, true}},
    {DType::kQ4_1, {"q4_1", 32, 20, true, true}},
    {DType::kQ5_0, {"q5_0", 32, 22, true, true}},
    {DType::kQ5_1, {"q5_1", 32, 24, true, true}},
    {DType::kQ8_0, {"q8_0", 32, 34, true, true}},
    {DType::kQ8_1, {"q8_1", 32, 36, true, true}},
    {DType::kQ2_K, {"q2_K", 256, 84, true, true}},
    {DType::kQ3_K, {"q3_K", 256, 110, true, true}},
    {DType::kQ4_K, {"q4_K", 256, 144, true, true}},
    {DType::kQ5_K, {"q5_K", 256, 176, true, true}},
    {DType::kQ6_K, {"q6_K", 256, 210, true, true}},
    {DType::kQ8_K, {"q8_K", 256, 292, true, true}},
    {DType::kI8, {"i8", 1, 1, true, true}},
    {DType::kI16, {"i16", 1, 2, true, true}},
    {DType::kI32, {"i32", 1, 4, true, true}},
    {DType::kI64, {"i64", 1, 8, true, true}},
    {DType::kF64, {"f64", 1, 8, true, true}},
    {DType::kBF16, {"bf16", 1, 2, true, true}},
    {DType::kMXFP4, {"mxfp4", 32, 17, true, true}},
}};

const TypeTraits* find_traits(uint32_t code) {
  for (const Entry& e : kTable) {
    if (static_cast<uint32_t>(e.type) == code) return &e.traits;
  }
  return nullptr;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool is_known_dtype(uint32_t code) { return find_traits(code) != nullptr; }

const TypeTraits& traits(DType type) {
  const TypeTraits* t = find_traits(static_cast<uint32_t>(type));
  if (t == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                "tensor type code " + std::to_string(static_cast<uint32_t>(type)) +
                    ": unknown type");
  }
  return *t;
}

const char* dtype_name(DType type) { return traits(type).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const Entry& e : kTable) {
    if (iequals(name, e.traits.name)) return e.type;
  }
  return std::nullopt;
}

size_t row_bytes(DType type, int64_t n) {
  const TypeTraits& t = traits(type);
  if (n < 0 || n % t.block_size != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("row of ") + std::to_string(n) + " elements of type " + t.name +
                    ": not a non-negative multiple of the block size " +
                    std::to_string(t.block_size));
  }
  const uint64_t blocks = static_cast<uint64_t>(n / t.block_size);
  if (blocks > std::numeric_limits<size_t>::max() / t.block_bytes) {
    throw Error(ErrorCode::kInvalidArgument, std::string("row of ") + std::to_string(n) +
                                                 " elements of type " + t.name +
                                                 ": byte size overflows");
  }
  return static_cast<size_t>(blocks) * t.block_bytes;
}

}  // namespace keel::tensor
