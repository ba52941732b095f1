// GgufWriter: collects metadata and tensors, then writes a version-3 file atomically.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/value_io.h"

namespace keel::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF"
constexpr uint32_t kVersion = 3;

[[noreturn]] void invalid(const std::string& reason) { throw Error(ErrorCode::kInvalidArgument, reason); }

template <typename T>
void append_raw(std::string& out, T x) {
  char buf[sizeof(T)];
  std::memcpy(buf, &x, sizeof(T));
  out.append(buf, sizeof(T));
}

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

// A FILE* on a temporary beside the target; removed unless committed by rename.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    static std::atomic<unsigned> counter{0};
    path_ = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) fail("cannot create " + path_);
  }
  ~TempFile() {
    if (f_) std::fclose(f_);
    if (!committed_) std::remove(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail("cannot write " + path_);
  }
  void pad_to(uint64_t pos, uint64_t aligned) {
    static const char zeros[256] = {};
    while (pos < aligned) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof zeros, aligned - pos));
      write(zeros, n);
      pos += n;
    }
  }
  void commit() {
    if (std::fflush(f_) != 0 || ::fsync(::fileno(f_)) != 0) fail("cannot flush " + path_);
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail("cannot close " + path_);
    if (std::rename(path_.c_str(), target_.c_str()) != 0) fail("cannot rename " + path_ + " to " + target_);
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw Error(ErrorCode::kIo, target_ + ": " + what + ": " + std::strerror(errno));
  }
  std::string target_, path_;
  FILE* f_ = nullptr;
  bool committed_ = false;
};

}  // namespace

void GgufWriter::set(const std::string& key, Value value) {
  if (key.empty()) invalid("metadata key is empty");
  if (key == "general.alignment") {
    const uint32_t* a = std::get_if<uint32_t>(&value.data);
    if (value.type != ValueType::kUint32 || !a) invalid("general.alignment must be a uint32");
    if (*a == 0 || (*a & (*a - 1)) != 0)
      invalid("general.alignment " + std::to_string(*a) + " is not a power of two");
  }
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, tensor::DType type, std::vector<int64_t> shape,
                            std::vector<uint8_t> data) {
  auto bytes = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  const size_t n = bytes->size();
  add_tensor(name, type, std::move(shape), [bytes](uint8_t* dst, size_t n_bytes) {
    std::memcpy(dst, bytes->data(), n_bytes);
  });
  if (tensors_.back().n_bytes != n) {
    uint64_t want = tensors_.back().n_bytes;
    tensors_.pop_back();
    invalid("tensor '" + name + "': data holds " + std::to_string(n) + " bytes, its shape and type need " +
            std::to_string(want));
  }
}

void GgufWriter::add_tensor(const std::string& name, tensor::DType type, std::vector<int64_t> shape,
                            TensorFill fill) {
  if (name.empty()) invalid("tensor name is empty");
  for (const auto& t : tensors_)
    if (t.name == name) invalid("duplicate tensor name '" + name + "'");
  if (!fill) invalid("tensor '" + name + "': no fill function");
  if (!tensor::is_known_dtype(static_cast<uint32_t>(type)))
    invalid("tensor '" + name + "': unknown type " + std::to_string(static_cast<uint32_t>(type)));
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxDims))
    invalid("tensor '" + name + "': " + std::to_string(shape.size()) + " dimensions, need 1.." +
            std::to_string(kMaxDims));
  uint64_t rows = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) invalid("tensor '" + name + "': dimension " + std::to_string(i) + " is " + std::to_string(shape[i]));
    if (i > 0 && __builtin_mul_overflow(rows, static_cast<uint64_t>(shape[i]), &rows))
      invalid("tensor '" + name + "': element count overflows");
  }
  uint64_t n_bytes = 0;
  uint64_t row = tensor::row_bytes(type, shape[0]);  // throws on a partial block
  if (__builtin_mul_overflow(row, rows, &n_bytes) || n_bytes > std::numeric_limits<size_t>::max() / 2)
    invalid("tensor '" + name + "': byte size overflows");
  tensors_.push_back({name, type, std::move(shape), n_bytes, std::move(fill)});
}

void GgufWriter::write(const std::string& path) const {
  uint64_t alignment = kDefaultAlignment;
  for (const auto& [k, v] : metadata_)
    if (k == "general.alignment") alignment = std::get<uint32_t>(v.data);  // checked in set()

  // Everything before the data section is built in memory: it is small.
  std::string head;
  append_raw<uint32_t>(head, kMagic);
  append_raw<uint32_t>(head, kVersion);
  append_raw<uint64_t>(head, tensors_.size());
  append_raw<uint64_t>(head, metadata_.size());
  for (const auto& [k, v] : metadata_) {
    append_raw<uint64_t>(head, k.size());
    head += k;
    append_raw<uint32_t>(head, static_cast<uint32_t>(v.type));
    try {
      detail::append_value(head, v, 0);
    } catch (const Error& e) {
      invalid(path + ": key '" + k + "': " + e.what());
    }
  }
  uint64_t offset = 0;  // relative to the data section
  uint64_t max_bytes = 0;
  for (const auto& t : tensors_) {
    append_raw<uint64_t>(head, t.name.size());
    head += t.name;
    append_raw<uint32_t>(head, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) append_raw<uint64_t>(head, static_cast<uint64_t>(d));
    append_raw<uint32_t>(head, static_cast<uint32_t>(t.type));
    append_raw<uint64_t>(head, offset);
    offset = align_up(offset + t.n_bytes, alignment);
    max_bytes = std::max(max_bytes, t.n_bytes);
  }

  TempFile out(path);
  out.write(head.data(), head.size());
  out.pad_to(head.size(), align_up(head.size(), alignment));
  std::vector<uint8_t> buf(max_bytes);  // one tensor at a time: [n_bytes of the largest]
  for (const auto& t : tensors_) {
    const size_t n = static_cast<size_t>(t.n_bytes);
    t.fill(buf.data(), n);
    out.write(buf.data(), n);
    out.pad_to(t.n_bytes, align_up(t.n_bytes, alignment));
  }
  out.commit();
}

}  // namespace keel::gguf
