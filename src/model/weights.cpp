#include "model/weights.h"

#include <cstring>

#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/gguf.h"
#include "tensor/types.h"

namespace keel::model {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool WeightBinder::has(const std::string& name) const {
  return file_.find_tensor(name) != nullptr;
}

const gguf::TensorInfo& WeightBinder::require(const std::string& name,
                                               const std::vector<int64_t>& shape) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (!t) {
    throw Error(ErrorCode::kNotFound, file_.path() + ": missing tensor '" + name +
                                          "' (expected shape " + shape_string(shape) + ")");
  }
  // Trailing dimensions of 1 are equivalent (GGUF writers differ in keeping them).
  std::vector<int64_t> have = t->shape, want = shape;
  while (have.size() > 1 && have.back() == 1) have.pop_back();
  while (want.size() > 1 && want.back() == 1) want.pop_back();
  if (have != want) {
    throw Error(ErrorCode::kInvalidFile, file_.path() + ": tensor '" + name + "' has shape " +
                                             shape_string(t->shape) + ", expected " +
                                             shape_string(shape));
  }
  if (!tensor::traits(t->type).has_dequantize) {
    throw Error(ErrorCode::kUnsupported, file_.path() + ": tensor '" + name + "' has type " +
                                             tensor::dtype_name(t->type) +
                                             ", which keel cannot compute with");
  }
  return *t;
}

kernels::WeightMatrix WeightBinder::matrix(const std::string& name, int64_t n_in, int64_t n_out) {
  const gguf::TensorInfo& t = require(name, {n_in, n_out});
  bound_.push_back({name, kernels::WeightMatrix::packed(t.type, matrix_data(t), n_in, n_out)});
  return bound_.back().w;
}

kernels::WeightMatrix WeightBinder::optional_matrix(const std::string& name, int64_t n_in,
                                                    int64_t n_out) {
  if (!has(name)) return {};
  return matrix(name, n_in, n_out);
}

Linear WeightBinder::linear(const std::string& base, int64_t n_in, int64_t n_out,
                            bool bias_required) {
  Linear l;
  l.w = matrix(base + ".weight", n_in, n_out);
  l.bias = bias_required ? vector(base + ".bias", n_out) : optional_vector(base + ".bias", n_out);
  return l;
}

ExpertMatrices WeightBinder::experts(const std::string& base, int64_t n_in, int64_t n_out,
                                     int64_t n_expert) {
  const gguf::TensorInfo& t = require(base + ".weight", {n_in, n_out, n_expert});
  ExpertMatrices m;
  m.first = kernels::WeightMatrix::packed(t.type, matrix_data(t), n_in, n_out);
  m.expert_stride = m.first.row_stride * static_cast<size_t>(n_out);
  m.n_expert = n_expert;
  for (int64_t e = 0; e < n_expert; ++e) bound_.push_back({base + ".weight", m.expert(e)});
  if (has(base + ".bias")) m.bias = tensor_f32(base + ".bias", {n_out, n_expert});
  return m;
}

namespace {

bool streams_stored_rows(tensor::DType type) {
  return type == tensor::DType::kF32 || type == tensor::DType::kF16 || type == tensor::DType::kBF16;
}

size_t aligned_64(uint64_t n) { return static_cast<size_t>((n + 63) / 64 * 64); }

}  // namespace

const uint8_t* WeightBinder::matrix_data(const gguf::TensorInfo& t) {
  if (!streams_stored_rows(t.type) || t.n_bytes == 0) return t.data;
  if (auto it = resident_copies_.find(&t); it != resident_copies_.end()) return it->second;
  if (!resident_sized_) {
    resident_sized_ = true;
    // Sized once for every float tensor of two or more dimensions (what may be bound as a
    // matrix), so copies share one buffer and no tensor's tail is left on 4 KiB pages;
    // the share of tensors never bound is reserved, never written, never backed.
    size_t capacity = 0;
    for (const gguf::TensorInfo& u : file_.tensors()) {
      if (streams_stored_rows(u.type) && u.shape.size() >= 2) capacity += aligned_64(u.n_bytes);
    }
    try {
      resident_ = LargeBuffer(capacity, "float weight matrices");
    } catch (const Error& e) {
      // A model larger than the memory the OS will commit still runs from the mapping
      // (paged from the file, slower), as it did before copies existed.
      if (e.code() != ErrorCode::kOutOfMemory) throw;
    }
  }
  const size_t bytes = aligned_64(t.n_bytes);
  if (bytes > resident_.size() - resident_used_) return t.data;  // not sized for it: read in place
  uint8_t* dst = resident_.data() + resident_used_;
  if (const MappedFile* mapping = file_.mapping()) {
    mapping->read_range(t.data, t.n_bytes, dst);
  } else {
    std::memcpy(dst, t.data, t.n_bytes);
  }
  resident_used_ += bytes;
  resident_copies_.emplace(&t, dst);
  return dst;
}

const float* WeightBinder::as_f32(const gguf::TensorInfo& t) {
  if (t.type == tensor::DType::kF32) return reinterpret_cast<const float*>(t.data);
  const int64_t n = t.n_elements();
  const int64_t row = t.shape.empty() ? n : t.shape[0];
  std::vector<float>& out = converted_.emplace_back(static_cast<size_t>(n));
  const size_t rb = tensor::row_bytes(t.type, row);
  for (int64_t r = 0; r * row < n; ++r) {
    tensor::dequantize_row(t.type, t.data + r * rb, out.data() + r * row, row);
  }
  return out.data();
}

const float* WeightBinder::tensor_f32(const std::string& name, const std::vector<int64_t>& shape) {
  return as_f32(require(name, shape));
}

const float* WeightBinder::vector(const std::string& name, int64_t n) {
  return tensor_f32(name, {n});
}

const float* WeightBinder::optional_vector(const std::string& name, int64_t n) {
  if (!has(name)) return nullptr;
  return vector(name, n);
}

}  // namespace keel::model
