// WeightBinder — looks tensors up by name in a GGUF file and checks their shapes.
//
// Matrices stay in their stored type (no whole-model dequantization). Quantized ones point
// into the file's mapping (Model::prepare_weights packs them for the integer kernels).
// Matrices of a float type (F32, F16, BF16), whose kernels stream the stored rows, are
// copied once at binding (read from the file, not faulted through the mapping) into one
// buffer the binder owns that the kernel may back with 2 MiB pages (core/large_buffer.h):
// a decode step streams every byte of them, and from 4 KiB file pages it ran 20-30% slower
// (docs/PERFORMANCE.md). A tensor bound twice (tied embeddings) is copied once. When that
// buffer cannot be had (kOutOfMemory: more than the OS will commit), they are read from the
// mapping instead.
// Small vectors (norm weights, biases, sinks) are used as f32: an F32 tensor is used in
// place; another float type is converted once into storage the binder owns. Shapes use
// GGUF order: ne[0] (the contiguous row length) first.
//
// Errors: a missing required tensor or a shape mismatch throws keel::Error (kNotFound /
// kInvalidFile) naming the file, the tensor, its shape and the expected shape.
// Ownership: the binder must outlive every pointer it returned (the Model keeps it).
// Thread-safety: none needed (used at load only); the returned views are read-only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/large_buffer.h"
#include "kernels/matmul.h"

namespace keel::gguf {
class GgufFile;
struct TensorInfo;
}  // namespace keel::gguf

namespace keel::model {

// y = W x + b over rows; `bias` may be null. Empty when w.data is null.
struct Linear {
  kernels::WeightMatrix w;
  const float* bias = nullptr;  // [w.n_out]
  bool present() const { return w.data != nullptr; }
};

// n_expert matrices [n_in → n_out] stored as one 3-D tensor [n_in, n_out, n_expert].
struct ExpertMatrices {
  kernels::WeightMatrix first;  // expert 0
  size_t expert_stride = 0;     // bytes between experts
  const float* bias = nullptr;  // [n_expert][n_out] or null
  int64_t n_expert = 0;
  kernels::WeightMatrix expert(int64_t e) const {
    kernels::WeightMatrix w = first;
    w.data += static_cast<size_t>(e) * expert_stride;
    return w;
  }
  const float* expert_bias(int64_t e) const { return bias ? bias + e * first.n_out : nullptr; }
};

class WeightBinder {
 public:
  explicit WeightBinder(const gguf::GgufFile& file) : file_(file) {}

  bool has(const std::string& name) const;

  // [n_in, n_out] matrix in any type with a dequantize_row.
  kernels::WeightMatrix matrix(const std::string& name, int64_t n_in, int64_t n_out);
  // As matrix(), but an absent tensor gives an empty view (data == nullptr).
  kernels::WeightMatrix optional_matrix(const std::string& name, int64_t n_in, int64_t n_out);
  // "<base>.weight" plus "<base>.bias" when present (required when bias_required).
  Linear linear(const std::string& base, int64_t n_in, int64_t n_out, bool bias_required = false);
  // [n_in, n_out, n_expert] plus optional "<base>.bias" [n_out, n_expert].
  ExpertMatrices experts(const std::string& base, int64_t n_in, int64_t n_out, int64_t n_expert);

  // f32 vector of exactly n elements (any float type converted once).
  const float* vector(const std::string& name, int64_t n);
  const float* optional_vector(const std::string& name, int64_t n);
  // f32 tensor of the given shape (any float type converted once).
  const float* tensor_f32(const std::string& name, const std::vector<int64_t>& shape);

  const gguf::GgufFile& file() const { return file_; }
  // Bytes of float matrices copied into the binder's buffer so far.
  uint64_t resident_bytes() const { return resident_used_; }

  // Every matrix view bound so far (each expert of an ExpertMatrices separately), in
  // binding order, with its tensor's name: what Model::prepare_weights packs at load.
  struct Bound {
    std::string tensor;
    kernels::WeightMatrix w;
  };
  const std::vector<Bound>& bound() const { return bound_; }

 private:
  const gguf::TensorInfo& require(const std::string& name, const std::vector<int64_t>& shape);
  const float* as_f32(const gguf::TensorInfo& t);
  // Where matrices of tensor t are read: its copy for a float type, else the mapping.
  const uint8_t* matrix_data(const gguf::TensorInfo& t);

  const gguf::GgufFile& file_;
  std::deque<std::vector<float>> converted_;  // deque: stable addresses
  LargeBuffer resident_;       // float matrices' copies, sized at the first one
  size_t resident_used_ = 0;
  bool resident_sized_ = false;
  std::map<const gguf::TensorInfo*, const uint8_t*> resident_copies_;
  std::vector<Bound> bound_;
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace keel::model
