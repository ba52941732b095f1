// Internal to the gguf module: a bounds-checked little-endian reader over a byte range.
// Every read checks the remaining bytes first; failures throw keel::Error(kInvalidFile)
// as "<name>: offset <N>: <reason>". Not thread-safe (one per parse).
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.h"

namespace keel::gguf::detail {

static_assert(std::endian::native == std::endian::little, "keel reads GGUF on little-endian hosts");

// A name for messages: quoted, control bytes escaped, cut at 64 bytes so a corrupt
// multi-megabyte "name" cannot bloat an error message.
inline std::string quoted(const std::string& s) {
  constexpr size_t kMax = 64;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out + "'";
}

class Cursor {
 public:
  Cursor(const std::string& name, const uint8_t* data, size_t size)
      : name_(name), data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  [[noreturn]] void fail_at(size_t offset, const std::string& reason) const {
    throw Error(ErrorCode::kInvalidFile,
                name_ + ": offset " + std::to_string(offset) + ": " + reason);
  }

  // Fails unless n bytes remain; `what` names the field for the message.
  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      fail_at(pos_, std::string(what) + " needs " + std::to_string(n) + " bytes but only " +
                        std::to_string(remaining()) + " remain");
  }

  template <typename T>
  T read(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  void skip(uint64_t n, const char* what) {
    need(n, what);
    pos_ += n;
  }

  // A GGUF string: u64 length, then that many bytes (no terminator).
  std::string read_string(const char* what) {
    size_t at = pos_;
    uint64_t len = read<uint64_t>(what);
    if (len > remaining()) {
      fail_at(at, std::string(what) + " length " + std::to_string(len) + " exceeds the " +
                      std::to_string(remaining()) + " bytes that remain");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const std::string& name_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace keel::gguf::detail
