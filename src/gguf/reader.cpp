// GgufFile: the one parse routine (header, metadata, tensor infos, data layout checks).
#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "gguf/cursor.h"
#include "gguf/gguf.h"
#include "gguf/value_io.h"
#include "gguf/value_layout.h"
#include "tensor/types.h"

namespace keel::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
// Smallest key/value pair: empty key (u64 length), u32 type, a 1-byte value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
// Smallest tensor info: name length, n_dims, one dim, type, offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

// Reads one tensor info; `alignment` is known by now (metadata comes first).
TensorInfo read_tensor_info(detail::Cursor& in) {
  TensorInfo t;
  size_t at = in.pos();
  t.name = in.read_string("tensor name");
  if (t.name.empty()) in.fail_at(at, "empty tensor name");
  const std::string who = "tensor " + detail::quoted(t.name) + ": ";

  size_t dims_at = in.pos();
  uint32_t n_dims = in.read<uint32_t>("tensor n_dims");
  if (n_dims < 1 || n_dims > static_cast<uint32_t>(kMaxDims))
    in.fail_at(dims_at, who + "n_dims " + std::to_string(n_dims) + " is outside 1.." +
                            std::to_string(kMaxDims));
  uint64_t n_elements = 1;
  for (uint32_t i = 0; i < n_dims; ++i) {
    size_t dim_at = in.pos();
    uint64_t d = in.read<uint64_t>("tensor dimension");
    if (d < 1 || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      in.fail_at(dim_at, who + "dimension " + std::to_string(i) + " is " + std::to_string(d));
    if (mul_overflows(n_elements, d, &n_elements) ||
        n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      in.fail_at(dim_at, who + "element count overflows at dimension " + std::to_string(i));
    t.shape.push_back(static_cast<int64_t>(d));
  }

  size_t type_at = in.pos();
  uint32_t code = in.read<uint32_t>("tensor type");
  if (!tensor::is_known_dtype(code))
    in.fail_at(type_at, who + "unknown tensor type " + std::to_string(code));
  t.type = static_cast<tensor::DType>(code);
  const tensor::TypeTraits& tr = tensor::traits(t.type);
  if (t.shape[0] % tr.block_size != 0)
    in.fail_at(dims_at, who + "row length " + std::to_string(t.shape[0]) +
                            " is not a multiple of the " + tr.name + " block size " +
                            std::to_string(tr.block_size));
  if (mul_overflows(n_elements / static_cast<uint64_t>(tr.block_size), tr.block_bytes, &t.n_bytes))
    in.fail_at(dims_at, who + "byte size overflows");
  t.offset = in.read<uint64_t>("tensor offset");
  return t;
}

}  // namespace

GgufFile::GgufFile(const std::string& path) : file_(std::in_place, path), name_(path) {
  base_ = file_->data();
  size_ = file_->size();
  parse();
}

GgufFile::GgufFile(std::string name, std::vector<uint8_t> bytes)
    : image_(std::move(bytes)), name_(std::move(name)) {
  base_ = image_.data();
  size_ = image_.size();
  parse();
}

GgufFile GgufFile::borrowing(std::string name, std::span<const uint8_t> bytes) {
  GgufFile f;
  f.name_ = std::move(name);
  f.base_ = bytes.data();
  f.size_ = bytes.size();
  f.parse();
  return f;
}

void GgufFile::parse() {
  detail::Cursor in(name_, base_, size_);
  if (size_ < 4) in.fail_at(0, "file of " + std::to_string(size_) + " bytes is too small for GGUF");
  uint32_t magic = in.read<uint32_t>("magic");
  if (magic != kMagic) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", magic);
    in.fail_at(0, std::string("bad magic ") + buf + ", not a GGUF file");
  }
  version_ = in.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) {
    std::string hint = (version_ & 0xFFFF) == 0 && version_ != 0 ? " (big-endian file?)" : "";
    in.fail_at(4, "GGUF version " + std::to_string(version_) + " is not supported (only 2 and 3)" + hint);
  }
  size_t counts_at = in.pos();
  uint64_t n_tensors = in.read<uint64_t>("tensor count");
  uint64_t n_kv = in.read<uint64_t>("metadata count");
  if (n_tensors > in.remaining() / kMinTensorInfoBytes)
    in.fail_at(counts_at, "tensor count " + std::to_string(n_tensors) + " exceeds what the " +
                              std::to_string(in.remaining()) + " remaining bytes can hold");
  if (n_kv > in.remaining() / kMinKvBytes)
    in.fail_at(counts_at + 8, "metadata count " + std::to_string(n_kv) + " exceeds what the " +
                                  std::to_string(in.remaining()) + " remaining bytes can hold");

  metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    size_t key_at = in.pos();
    std::string key = in.read_string("metadata key");
    if (key.empty()) in.fail_at(key_at, "empty metadata key");
    if (metadata_index_.count(key)) in.fail_at(key_at, "duplicate key " + detail::quoted(key));
    size_t type_at = in.pos();
    uint32_t code = in.read<uint32_t>("value type");
    if (!detail::is_known_value_type(code))
      in.fail_at(type_at, "key " + detail::quoted(key) + ": unknown value type " + std::to_string(code));
    Value v = detail::read_value(in, static_cast<ValueType>(code), 0);
    if (key == "general.alignment") {
      if (v.type != ValueType::kUint32)
        in.fail_at(type_at, std::string("general.alignment must be uint32, not ") + value_type_name(v.type));
      uint32_t a = std::get<uint32_t>(v.data);
      if (a == 0 || (a & (a - 1)) != 0)
        in.fail_at(type_at, "general.alignment " + std::to_string(a) + " is not a power of two");
      alignment_ = a;
    }
    metadata_index_.emplace(key, metadata_.size());
    metadata_.emplace_back(std::move(key), std::move(v));
  }

  std::vector<size_t> info_at;  // where each tensor info starts, for messages
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    info_at.push_back(in.pos());
    TensorInfo t = read_tensor_info(in);
    if (tensor_index_.count(t.name)) in.fail_at(info_at.back(), "duplicate tensor name " + detail::quoted(t.name));
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment. A file without tensors
  // may end before it.
  data_offset_ = (in.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors == 0) return;
  if (data_offset_ > size_)
    in.fail_at(in.pos(), "data section at " + std::to_string(data_offset_) + " starts past the end of the file (" +
                             std::to_string(size_) + " bytes)");
  const uint64_t data_size = size_ - data_offset_;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    TensorInfo& t = tensors_[i];
    const std::string who = "tensor " + detail::quoted(t.name) + ": ";
    if (t.offset % alignment_ != 0)
      in.fail_at(info_at[i], who + "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                                 std::to_string(alignment_));
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      in.fail_at(info_at[i], who + "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                                 ") runs past the end of the file (data section holds " + std::to_string(data_size) +
                                 " bytes)");
    t.data = base_ + data_offset_ + t.offset;
  }
  std::vector<size_t> order(tensors_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = tensors_[order[k - 1]];
    const TensorInfo& cur = tensors_[order[k]];
    if (cur.offset < prev.offset + prev.n_bytes)
      in.fail_at(info_at[order[k]], "tensor " + detail::quoted(cur.name) + ": data at " + std::to_string(cur.offset) +
                                        " overlaps tensor " + detail::quoted(prev.name) + " [" + std::to_string(prev.offset) +
                                        ", " + std::to_string(prev.offset + prev.n_bytes) + ")");
  }
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated at parse: no overflow
  return n;
}

}  // namespace keel::gguf
