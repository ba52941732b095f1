// The real files under ../shared open, and what they hold matches the facts recorded
// independently in each reference set's meta.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alloc_tracker.h"
#include "gguf/gguf.h"
#include "gguf_bytes.h"
#include "support/paths.h"
#include "tensor/types.h"

namespace keel::gguf {
namespace {

TEST(GgufRealFiles, EveryFileUnderSharedOpens) {
  auto files = test::shared_gguf_files();
  ASSERT_GE(files.size(), 26u) << "expected the models, reference sets and vocab files under " << test::shared_dir();
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    size_t file_size = std::filesystem::file_size(path);
    test::AllocTracker tracker;
    GgufFile f(path);
    // Everything parsed costs a small multiple of the file's size.
    EXPECT_LE(tracker.stats().total_bytes, 8 * file_size + 65536);
    EXPECT_TRUE(f.version() == 2 || f.version() == 3);
    EXPECT_FALSE(f.get_string("general.architecture").empty());
    EXPECT_TRUE(f.has("tokenizer.ggml.model"));
    uint64_t end = 0;  // a file without tensors may end before the aligned data section
    for (const auto& t : f.tensors()) {
      EXPECT_NE(t.data, nullptr) << t.name;
      EXPECT_EQ(t.n_bytes, tensor::row_bytes(t.type, t.shape[0]) * (t.n_elements() / t.shape[0])) << t.name;
      end = std::max(end, f.data_offset() + t.offset + t.n_bytes);
    }
    EXPECT_LE(end, f.file_size());
  }
}

TEST(GgufRealFiles, Stories260KFacts) {
  GgufFile f(test::reference_path("stories260K", "model.gguf"));
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("llama.block_count"), 5);
  EXPECT_EQ(f.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f.get_int("tokenizer.ggml.padding_token_id"), 4294967295);
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->as_array<std::string>().size(), 512u);
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->as_array<std::string>()[1], "<s>");
  EXPECT_EQ(f.tensors().size(), 48u);
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(emb->type, tensor::DType::kF32);
  EXPECT_EQ(emb->n_bytes, 64u * 512 * 4);
  EXPECT_EQ(emb->data, f.tensors()[0].data);  // first tensor: at the start of the data section
}

// Compares every reference set's tensor list and scalar metadata with its meta.json.
TEST(GgufRealFiles, ReferenceSetsMatchTheirMetaJson) {
  int sets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::shared_dir() + "/reference")) {
    const std::string meta_path = entry.path().string() + "/meta.json";
    if (!std::filesystem::exists(meta_path)) continue;
    SCOPED_TRACE(meta_path);
    nlohmann::json meta = nlohmann::json::parse(std::ifstream(meta_path));
    const std::string name = entry.path().filename().string();
    GgufFile f(test::reference_path(name, "model.gguf"));
    ++sets;

    const auto& tensors = meta.at("tensors");
    ASSERT_EQ(f.tensors().size(), tensors.size());
    for (const auto& t : tensors) {
      const TensorInfo* info = f.find_tensor(t.at("name").get<std::string>());
      ASSERT_NE(info, nullptr) << t.at("name");
      EXPECT_EQ(info->shape, t.at("ne").get<std::vector<int64_t>>()) << info->name;
      auto type = tensor::dtype_from_name(t.at("type").get<std::string>());
      ASSERT_TRUE(type.has_value()) << t.at("type");
      EXPECT_EQ(info->type, *type) << info->name;
    }
    for (const auto& [key, expected] : meta.at("gguf_metadata").items()) {
      const Value* v = f.find(key);
      ASSERT_NE(v, nullptr) << key;
      if (expected.is_string() && v->type == ValueType::kString) {
        EXPECT_EQ(v->as_string(), expected.get<std::string>()) << key;
      } else if (expected.is_string()) {
        EXPECT_EQ(expected.get<std::string>(), "<array of " + std::to_string(v->array_size()) + ">") << key;
      } else if (expected.is_number_integer() || expected.is_number_unsigned()) {
        EXPECT_EQ(v->as_int(), expected.get<int64_t>()) << key;
      } else if (expected.is_number_float()) {
        EXPECT_DOUBLE_EQ(v->as_float(), expected.get<double>()) << key;
      } else if (expected.is_boolean()) {
        EXPECT_EQ(v->as_bool(), expected.get<bool>()) << key;
      }
    }
  }
  EXPECT_GE(sets, 17);
}

}  // namespace
}  // namespace keel::gguf
