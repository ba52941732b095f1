// Test helper: builds GGUF images byte by byte, for hand-made malformed files, and lists
// the .gguf files under ../shared.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace keel::test {

class GgufBytes {
 public:
  // magic, version, tensor count, metadata count
  GgufBytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  }
  GgufBytes& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    return *this;
  }
  GgufBytes& u8(uint8_t v) { return raw(&v, 1); }
  GgufBytes& u32(uint32_t v) { return raw(&v, 4); }
  GgufBytes& u64(uint64_t v) { return raw(&v, 8); }
  GgufBytes& f32(float v) { return raw(&v, 4); }
  GgufBytes& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
  // key, value type, (caller appends the body)
  GgufBytes& key(const std::string& k, uint32_t type) { return str(k).u32(type); }
  // name, n_dims, dims, type, offset
  GgufBytes& tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                    uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  GgufBytes& pad_to(size_t alignment) {
    while (bytes.size() % alignment) bytes.push_back(0);
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }
  size_t size() const { return bytes.size(); }

  std::vector<uint8_t> bytes;
};

// Every .gguf file under ../shared (models, reference sets, vocab files), sorted.
std::vector<std::string> shared_gguf_files();

std::vector<uint8_t> read_bytes(const std::string& path);

}  // namespace keel::test
