// dequantize_row / quantize_row: argument checks and dispatch per type. Plain (non-block)
// types are converted here; block types live in quant_*.cpp.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "tensor/quant_internal.h"
#include "tensor/types.h"

namespace keel::tensor {
namespace {

void check_row(DType type, const void* a, const void* b, int64_t n, const char* what) {
  row_bytes(type, n);  // validates n against the block size
  if (n > 0 && (a == nullptr || b == nullptr)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + " of type " + dtype_name(type) + ": null buffer");
  }
}

template <typename T>
void load_plain(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));  // rows need not be aligned
    dst[i] = static_cast<float>(v);
  }
}

// Saturating float -> integer with round-to-nearest; NaN becomes 0 (never UB).
template <typename T>
void store_int(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  for (int64_t i = 0; i < n; ++i) {
    const double r = std::nearbyint(static_cast<double>(src[i]));
    T v = 0;
    if (r >= hi) {
      v = std::numeric_limits<T>::max();
    } else if (r <= lo) {
      v = std::numeric_limits<T>::min();
    } else if (r == r) {
      v = static_cast<T>(r);
    }
    std::memcpy(p + i * sizeof(T), &v, sizeof(T));
  }
}

void load_halves(const void* src, float* dst, int64_t n, float (*conv)(uint16_t)) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    dst[i] = conv(h);
  }
}

void store_halves(const float* src, void* dst, int64_t n, uint16_t (*conv)(float)) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = conv(src[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

}  // namespace

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  check_row(type, src, dst, n, "dequantize_row");
  const int64_t nb = n / traits(type).block_size;
  switch (type) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::kF16: load_halves(src, dst, n, fp16_to_fp32); return;
    case DType::kBF16: load_halves(src, dst, n, bf16_to_fp32); return;
    case DType::kF64: load_plain<double>(src, dst, n); return;
    case DType::kI8: load_plain<int8_t>(src, dst, n); return;
    case DType::kI16: load_plain<int16_t>(src, dst, n); return;
    case DType::kI32: load_plain<int32_t>(src, dst, n); return;
    case DType::kI64: load_plain<int64_t>(src, dst, n); return;
    case DType::kQ4_0: detail::dequantize_q4_0(src, dst, nb); return;
    case DType::kQ4_1: detail::dequantize_q4_1(src, dst, nb); return;
    case DType::kQ5_0: detail::dequantize_q5_0(src, dst, nb); return;
    case DType::kQ5_1: detail::dequantize_q5_1(src, dst, nb); return;
    case DType::kQ8_0: detail::dequantize_q8_0(src, dst, nb); return;
    case DType::kQ8_1: detail::dequantize_q8_1(src, dst, nb); return;
    case DType::kQ2_K: detail::dequantize_q2_k(src, dst, nb); return;
    case DType::kQ3_K: detail::dequantize_q3_k(src, dst, nb); return;
    case DType::kQ4_K: detail::dequantize_q4_k(src, dst, nb); return;
    case DType::kQ5_K: detail::dequantize_q5_k(src, dst, nb); return;
    case DType::kQ6_K: detail::dequantize_q6_k(src, dst, nb); return;
    case DType::kQ8_K: detail::dequantize_q8_k(src, dst, nb); return;
    case DType::kMXFP4: detail::dequantize_mxfp4(src, dst, nb); return;
  }
  throw Error(ErrorCode::kUnsupported, std::string("dequantize_row: type ") + dtype_name(type) +
                                           ": no reference conversion");
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  check_row(type, src, dst, n, "quantize_row");
  const int64_t nb = n / traits(type).block_size;
  switch (type) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::kF16: fp32_to_fp16_row(src, dst, n); return;
    case DType::kBF16: store_halves(src, dst, n, fp32_to_bf16); return;
    case DType::kF64: {
      auto* p = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        const double v = src[i];
        std::memcpy(p + 8 * i, &v, 8);
      }
      return;
    }
    case DType::kI8: store_int<int8_t>(src, dst, n); return;
    case DType::kI16: store_int<int16_t>(src, dst, n); return;
    case DType::kI32: store_int<int32_t>(src, dst, n); return;
    case DType::kI64: store_int<int64_t>(src, dst, n); return;
    case DType::kQ4_0: detail::quantize_q4_0(src, dst, nb); return;
    case DType::kQ4_1: detail::quantize_q4_1(src, dst, nb); return;
    case DType::kQ5_0: detail::quantize_q5_0(src, dst, nb); return;
    case DType::kQ5_1: detail::quantize_q5_1(src, dst, nb); return;
    case DType::kQ8_0: detail::quantize_q8_0(src, dst, nb); return;
    case DType::kQ8_1: detail::quantize_q8_1(src, dst, nb); return;
    case DType::kQ2_K: detail::quantize_q2_k(src, dst, nb); return;
    case DType::kQ3_K: detail::quantize_q3_k(src, dst, nb); return;
    case DType::kQ4_K: detail::quantize_q4_k(src, dst, nb); return;
    case DType::kQ5_K: detail::quantize_q5_k(src, dst, nb); return;
    case DType::kQ6_K: detail::quantize_q6_k(src, dst, nb); return;
    case DType::kQ8_K: detail::quantize_q8_k(src, dst, nb); return;
    case DType::kMXFP4: detail::quantize_mxfp4(src, dst, nb); return;
  }
  throw Error(ErrorCode::kUnsupported, std::string("quantize_row: type ") + dtype_name(type) +
                                           ": no reference conversion");
}

}  // namespace keel::tensor
