// libFuzzer target for the GGUF reader: parses the input from memory, then walks
// everything a caller can reach. The only acceptable failure is keel::Error; anything
// else escaping (std::bad_alloc, length_error, ...) or any sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"
#include "gguf/gguf.h"

namespace {

void walk(const keel::gguf::GgufFile& f) {
  for (const auto& [key, v] : f.metadata()) {
    (void)v.to_string(4);
    // Conversions may refuse (keel::Error); they must not do anything else.
    try { (void)v.as_int(); } catch (const keel::Error&) {}
    try { (void)v.as_float(); } catch (const keel::Error&) {}
    try { (void)v.as_int_array(); } catch (const keel::Error&) {}
    try { (void)f.get_string(key); } catch (const keel::Error&) {}
  }
  volatile uint8_t sink = 0;
  for (const auto& t : f.tensors()) {
    // Touch the first and last byte: the reader promised both are inside the image.
    sink = sink + t.data[0] + t.data[t.n_bytes - 1];
    if (f.find_tensor(t.name) == nullptr) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // libFuzzer's buffer holds exactly `size` bytes, so ASan sees any read past the end.
    auto f = keel::gguf::GgufFile::borrowing("fuzz.gguf", std::span<const uint8_t>(data, size));
    walk(f);
  } catch (const keel::Error&) {
    // Rejected input: the expected outcome for almost everything.
  }
  return 0;
}
