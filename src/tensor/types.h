// Tensor data types with GGUF's exact codes and block layouts, and the scalar reference
// conversions (dequantize / quantize a row) that every faster kernel is tested against.
//
// A row of n elements of a block type occupies (n / block_size) * block_bytes bytes; n must
// be a multiple of block_size. Block structs (bit-exact with GGUF) are in tensor/blocks.h.
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keel::tensor {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
  kMXFP4 = 39,
};

struct TypeTraits {
  const char* name;     // lower-case GGUF-style name: "f32", "q4_0", "q4_K", ...
  int64_t block_size;   // elements per block (1 for plain types)
  size_t block_bytes;   // bytes per block
  bool has_dequantize;  // a reference dequantize_row exists
  bool has_quantize;    // a reference quantize_row exists
};

// True when `code` is a type keel knows the layout of.
bool is_known_dtype(uint32_t code);
// Traits of a known type; throws keel::Error(kUnsupported) otherwise.
const TypeTraits& traits(DType type);
const char* dtype_name(DType type);
// Parses "f16", "q8_0", "Q4_K", "bf16", ... (case-insensitive).
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of a row of n elements. Throws keel::Error(kInvalidArgument) when n is not a
// multiple of the block size or the size overflows.
size_t row_bytes(DType type, int64_t n);

// Scalar reference conversions of one row of n elements (n a multiple of the block
// size). Throw keel::Error(kUnsupported) for a type without the conversion.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);
void quantize_row(DType type, const float* src, void* dst, int64_t n);

// Half-precision scalars (round-to-nearest-even; NaN/Inf preserved).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

// n floats to IEEE halves at dst (2n bytes, any alignment), fp32_to_fp16's bits for every
// element. kAuto uses F16C where the machine has it (and KEEL_CPU allows); kScalar is the
// reference loop (for tests).
enum class RowIsa { kAuto, kScalar };
void fp32_to_fp16_row(const float* src, void* dst, int64_t n, RowIsa isa = RowIsa::kAuto);

}  // namespace keel::tensor
