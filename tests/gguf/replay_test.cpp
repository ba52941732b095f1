// Replays a corpus of truncated and mutated images made from the real files under
// ../shared: every input either parses into something self-consistent or throws
// keel::Error, never anything else; no input allocates more than a small multiple of
// its size. The fuzzer (fuzz/fuzz_gguf.cpp) explores further; this catches regressions
// in CI without running it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>

#include "alloc_tracker.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "support/paths.h"

namespace keel::gguf {
namespace {

// A place in the image and the width of the field there.
struct Field {
  size_t at;
  int width;  // 4 or 8
};

struct Outcome {
  size_t parsed = 0, rejected = 0;
};

// Parses one candidate in place; fails the test on anything but success or keel::Error.
void replay(std::span<const uint8_t> image, Outcome& out, const std::string& what) {
  const size_t size = image.size();
  test::AllocTracker tracker;
  try {
    GgufFile f = GgufFile::borrowing("replay.gguf", image);
    // Whatever parsed must be self-consistent.
    for (const auto& t : f.tensors()) {
      ASSERT_LE(t.offset + t.n_bytes, f.file_size() - f.data_offset()) << what;
      ASSERT_GE(t.n_bytes, 1u) << what;
    }
    for (const auto& [k, v] : f.metadata()) (void)v.to_string(4);
    ++out.parsed;
  } catch (const Error& e) {
    ASSERT_EQ(e.code(), ErrorCode::kInvalidFile) << what << ": " << e.what();
    ++out.rejected;
  } catch (const std::exception& e) {
    FAIL() << what << ": non-keel exception: " << e.what();
  }
  ASSERT_LE(tracker.stats().total_bytes, 8 * size + 65536) << what;
}

size_t find_from(const std::vector<uint8_t>& b, size_t from, const std::string& len_and_text) {
  auto it = std::search(b.begin() + std::min(from, b.size()), b.end(), len_and_text.begin(), len_and_text.end());
  return it == b.end() ? std::string::npos : static_cast<size_t>(it - b.begin());
}

std::string gguf_string(const std::string& s) {
  uint64_t n = s.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + s;
}

// Locates the length, count, type and offset fields of the header by searching for each
// key and tensor name in order (a layout found independently of the parser).
std::vector<Field> find_fields(const std::vector<uint8_t>& b, const GgufFile& f) {
  std::vector<Field> out = {{8, 8}, {16, 8}, {4, 4}};  // counts, version
  size_t pos = 24;
  for (const auto& [key, v] : f.metadata()) {
    size_t at = find_from(b, pos, gguf_string(key));
    if (at == std::string::npos) continue;
    size_t type_at = at + 8 + key.size();
    out.push_back({at, 8});
    out.push_back({type_at, 4});
    if (v.type == ValueType::kString) out.push_back({type_at + 4, 8});
    if (v.is_array()) {
      out.push_back({type_at + 4, 4});
      out.push_back({type_at + 8, 8});
      if (v.array_type == ValueType::kString && v.array_size() > 0) out.push_back({type_at + 16, 8});
    }
    pos = type_at;
  }
  for (const auto& t : f.tensors()) {
    size_t at = find_from(b, pos, gguf_string(t.name));
    if (at == std::string::npos) continue;
    size_t dims_at = at + 8 + t.name.size();
    out.push_back({at, 8});
    out.push_back({dims_at, 4});
    for (size_t d = 0; d < t.shape.size(); ++d) out.push_back({dims_at + 4 + 8 * d, 8});
    size_t type_at = dims_at + 4 + 8 * t.shape.size();
    out.push_back({type_at, 4});
    out.push_back({type_at + 4, 8});
    pos = type_at;
  }
  return out;
}

uint64_t read_field(const std::vector<uint8_t>& b, Field f) {
  uint64_t v = 0;
  std::memcpy(&v, b.data() + f.at, f.width);
  return v;
}

void write_field(std::vector<uint8_t>& b, Field f, uint64_t v) { std::memcpy(b.data() + f.at, &v, f.width); }

class GgufReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufReplay, TruncationsAndMutationsParseOrThrowKeelError) {
  const std::string path = test::shared_dir() + "/" + GetParam();
  const std::vector<uint8_t> original = test::read_bytes(path);
  ASSERT_FALSE(original.empty()) << path;
  GgufFile parsed(path);
  const size_t header_end = std::min<size_t>(parsed.data_offset(), original.size());
  std::mt19937_64 rng(0x6b65656c);  // fixed seed: the same corpus every run
  Outcome out;

  const std::vector<Field> fields = find_fields(original, parsed);
  ASSERT_GT(fields.size(), 3 + parsed.metadata().size()) << "field search found too little";
  // The tensor infos start at the first tensor's name (after every metadata field).
  size_t infos_at = header_end;
  if (!parsed.tensors().empty()) infos_at = find_from(original, 24, gguf_string(parsed.tensors()[0].name));
  ASSERT_LE(infos_at, header_end);

  // Truncation at every byte of the header's start and of the tensor-info region, and at
  // sampled offsets everywhere else (metadata arrays, data).
  std::vector<size_t> cuts;
  for (size_t n = 0; n < std::min<size_t>(header_end, 16384); ++n) cuts.push_back(n);
  for (size_t n = infos_at; n <= header_end && !parsed.tensors().empty(); ++n) cuts.push_back(n);
  for (int i = 0; i < 200; ++i) cuts.push_back(rng() % original.size());
  for (size_t n : cuts) {
    // A copy of exactly n bytes, so a sanitizer build catches any read past the cut.
    const std::vector<uint8_t> prefix(original.begin(), original.begin() + n);
    replay(prefix, out, "cut at " + std::to_string(n));
    if (HasFatalFailure()) return;
  }

  // Field mutations: each length, count, type and offset set to boundary values. One
  // working copy is mutated in place and restored (the data region never changes).
  std::vector<uint8_t> work = original;
  for (Field fl : fields) {
    const uint64_t orig = read_field(original, fl);
    const uint64_t values[] = {0, 1, 2, 3, 4, 7, 9, 13, 31, 0xFF, 0x7FFFFFFF, 0xFFFFFFFF, 1ull << 32,
                               1ull << 60, 1ull << 63, ~0ull, orig + 1, orig - 1, orig * 2, orig + 32,
                               rng()};
    for (uint64_t v : values) {
      write_field(work, fl, v);
      replay(work, out, "field at " + std::to_string(fl.at) + " = " + std::to_string(v));
      write_field(work, fl, orig);
      if (HasFatalFailure()) return;
    }
  }

  // Seeded random byte flips: mostly in the header, some in the data. Fewer for files
  // whose header is large (vocabularies), where each parse costs more.
  const int n_flip_sets = header_end > 65536 ? 300 : 1500;
  for (int i = 0; i < n_flip_sets; ++i) {
    const int flips = 1 + static_cast<int>(rng() % 4);
    std::vector<size_t> flipped;
    for (int k = 0; k < flips; ++k) {
      size_t at = (i % 8 == 7 || header_end == 0) ? rng() % work.size() : rng() % header_end;
      work[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      flipped.push_back(at);
    }
    replay(work, out, "flip set " + std::to_string(i));
    for (size_t at : flipped) work[at] = original[at];
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(out.parsed, 0u);  // some mutations keep the file valid (e.g. flips in the data)
  EXPECT_GT(out.rejected, 500u);
}

INSTANTIATE_TEST_SUITE_P(RealFiles, GgufReplay,
                         ::testing::Values("models/stories260K.gguf", "reference/llama-q4_0/model.gguf",
                                           "reference/qwen3-k-q4_k_m/model.gguf", "reference/gpt-oss/model.gguf",
                                           "reference/vocab/ggml-vocab-llama-spm.gguf"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace keel::gguf
