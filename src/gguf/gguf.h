// GGUF files: reading (memory-mapped, strictly validated) and writing.
//
// GgufFile is the contract for reading. Opening maps the file and parses the header,
// metadata and tensor infos; tensor data is never read at open (a multi-GB file opens in
// milliseconds). Every count, length, dimension, offset and size is checked against the
// file's size and for overflow; anything malformed throws keel::Error(kInvalidFile) whose
// message names the file, the byte offset and the reason. No input can make the reader
// allocate more than a small multiple of the file's size.
//
// Thread-safety: a GgufFile is immutable after construction; concurrent reads are safe.
// Ownership: tensor data pointers point into the mapping (or the in-memory image, or the
// caller's borrowed bytes) and live as long as the GgufFile; moving it keeps them valid.
//
// Format accepted: GGUF versions 2 and 3, little-endian, 64-bit counts. Limits beyond the
// file size: tensors have 1..kMaxDims dimensions, each >= 1; arrays nest at most
// kMaxArrayDepth deep; general.alignment is a uint32 power of two.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "tensor/types.h"

namespace keel::gguf {

inline constexpr int kMaxDims = 4;        // tensor dimensions (as ggml)
inline constexpr int kMaxArrayDepth = 8;  // an array's elements may be arrays, this deep
inline constexpr uint64_t kDefaultAlignment = 32;

// GGUF metadata value types, with their on-disk codes.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* value_type_name(ValueType t);

struct Value;
using Array = std::vector<Value>;  // only for arrays of arrays

// A metadata value. Scalars hold one element; arrays hold a typed vector. Arrays of
// numbers are kept compactly (one vector of the element type), never as Value per item.
struct Value {
  ValueType type = ValueType::kUint8;
  ValueType array_type = ValueType::kUint8;  // element type when type == kArray
  std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
               uint64_t, int64_t, double,
               std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
               std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
               std::vector<float>, std::vector<bool>, std::vector<std::string>,
               std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>,
               std::shared_ptr<Array>>
      data;

  // Constructors for writing.
  static Value u8(uint8_t v);
  static Value i8(int8_t v);
  static Value u16(uint16_t v);
  static Value i16(int16_t v);
  static Value u32(uint32_t v);
  static Value i32(int32_t v);
  static Value f32(float v);
  static Value boolean(bool v);
  static Value str(std::string v);
  static Value u64(uint64_t v);
  static Value i64(int64_t v);
  static Value f64(double v);
  template <typename T>
  static Value array(std::vector<T> v);  // T one of the scalar types above or std::string
  static Value array_of_arrays(Array v);

  bool is_array() const { return type == ValueType::kArray; }
  size_t array_size() const;  // 0 for scalars

  // Numeric access with range-checked conversion; throws keel::Error(kInvalidFile) when
  // the value is not numeric or does not fit.
  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_float() const;
  bool as_bool() const;
  const std::string& as_string() const;  // throws unless type == kString
  // Typed array access; throws unless the array's element type is exactly T.
  template <typename T>
  const std::vector<T>& as_array() const;
  // Array of integers of any element type, converted (range-checked) to int64.
  std::vector<int64_t> as_int_array() const;
  std::vector<double> as_float_array() const;

  // Deep equality of type and contents; floats compare by bit pattern, so a NaN read back
  // equals the NaN written.
  bool operator==(const Value& other) const;
  std::string to_string(size_t max_items = 8) const;  // for printing
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ne[0] first: ne[0] is the contiguous (row) dimension
  tensor::DType type;
  uint64_t offset = 0;   // relative to the data section
  uint64_t n_bytes = 0;  // computed from shape and type
  const uint8_t* data = nullptr;  // into the mapping

  int64_t n_elements() const;
};

class GgufFile {
 public:
  // Opens and validates. Throws keel::Error (kIo or kInvalidFile).
  explicit GgufFile(const std::string& path);
  // Parses an in-memory image with the same routine (fuzzing, replay tests); `name` stands
  // in for the path in messages. Throws keel::Error(kInvalidFile).
  GgufFile(std::string name, std::vector<uint8_t> bytes);
  // Parses bytes the caller keeps alive and unchanged while the GgufFile lives, without
  // copying them (replay tests and fuzzing mutate one buffer in place).
  static GgufFile borrowing(std::string name, std::span<const uint8_t> bytes);
  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section
  uint64_t file_size() const { return size_; }
  // The memory map behind the tensor data when opened from a path; nullptr for an
  // in-memory or borrowed image (whose pages must never be released).
  const MappedFile* mapping() const { return file_ ? &*file_ : nullptr; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(const std::string& key) const;  // nullptr when absent
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // Typed getters: throw keel::Error(kNotFound) naming the key when absent, kInvalidFile
  // when the type does not convert. The _or forms return the default when absent.
  int64_t get_int(const std::string& key) const;
  int64_t get_int_or(const std::string& key, int64_t dflt) const;
  double get_float(const std::string& key) const;
  double get_float_or(const std::string& key, double dflt) const;
  bool get_bool_or(const std::string& key, bool dflt) const;
  std::string get_string(const std::string& key) const;
  std::string get_string_or(const std::string& key, const std::string& dflt) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;  // nullptr when absent

 private:
  GgufFile() = default;
  void parse();  // the one parse routine behind every constructor

  std::optional<MappedFile> file_;  // set when opened from a path
  std::vector<uint8_t> image_;      // set when parsed from memory
  std::string name_;
  const uint8_t* base_ = nullptr;   // the whole file's bytes: file_ or image_
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Writing. Collect metadata and tensors, then write(); tensors are laid out in the order
// added, each aligned to `general.alignment` (default 32). Version 3, little-endian.
// Not thread-safe. What it writes, GgufFile reads back identically (same metadata by
// operator==, same tensor bytes).
class GgufWriter {
 public:
  // Fills dst[0, n_bytes) with a tensor's data; called once per write(), tensor by
  // tensor, so a multi-GB model never has to be in memory at once.
  using TensorFill = std::function<void(uint8_t* dst, size_t n_bytes)>;

  // Replaces an existing key, keeps order. general.alignment must be a uint32 power of
  // two: throws keel::Error(kInvalidArgument) otherwise.
  void set(const std::string& key, Value value);
  // Adds a tensor; data must hold exactly tensor::row_bytes(type, shape[0]) * rows bytes.
  // Throws keel::Error(kInvalidArgument) on a duplicate name, a bad shape (1..kMaxDims
  // dims, each >= 1, shape[0] a multiple of the block size) or a size mismatch.
  void add_tensor(const std::string& name, tensor::DType type, std::vector<int64_t> shape,
                  std::vector<uint8_t> data);
  // Streaming form: `fill` provides the bytes at write time (same checks, minus the size).
  void add_tensor(const std::string& name, tensor::DType type, std::vector<int64_t> shape,
                  TensorFill fill);
  // Writes the file (atomically via a temporary + rename). Throws keel::Error(kIo), or
  // kInvalidArgument for a Value whose type does not match its contents; an exception
  // from a fill function propagates, and no file (nor temporary) is left behind.
  void write(const std::string& path) const;

  size_t tensor_count() const { return tensors_.size(); }

 private:
  struct PendingTensor {
    std::string name;
    tensor::DType type;
    std::vector<int64_t> shape;
    uint64_t n_bytes = 0;
    TensorFill fill;
  };
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace keel::gguf
