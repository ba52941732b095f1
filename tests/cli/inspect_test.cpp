// `keel inspect` through the built binary (KEEL_BIN): every GGUF file under ../shared
// prints as text and as JSON, facts of stories260K show up, corrupt files and bad flags
// give clean errors with exit codes 1 and 2.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/paths.h"

namespace keel::test {
namespace {

struct Result {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Result inspect(const std::string& args) {
  const std::string out_path = temp_dir() + "/inspect_stdout.txt", err_path = temp_dir() + "/inspect_stderr.txt";
  const std::string cmd = std::string(KEEL_BIN) + " inspect " + args + " > " + out_path + " 2> " + err_path;
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;  // -1: killed by a signal
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

std::vector<std::string> shared_gguf_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(shared_dir()))
    if (e.is_regular_file() && e.path().extension() == ".gguf") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Inspect, EveryFileUnderSharedPrintsAsTextAndJson) {
  const auto files = shared_gguf_files();
  ASSERT_GE(files.size(), 26u);
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    Result text = inspect(path);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("architecture: "), std::string::npos);
    EXPECT_NE(text.out.find("tokenizer: model "), std::string::npos);
    EXPECT_NE(text.out.find("total weight bytes: "), std::string::npos);

    Result js = inspect("--json " + path);
    ASSERT_EQ(js.exit_code, 0) << js.err;
    nlohmann::json j = nlohmann::json::parse(js.out);  // throws (fails the test) unless one valid object
    ASSERT_TRUE(j.is_object());
    EXPECT_FALSE(j.at("architecture").get<std::string>().empty());
    uint64_t sum = 0;
    for (const auto& t : j.at("tensors")) sum += t.at("bytes").get<uint64_t>();
    EXPECT_EQ(sum, j.at("weight_bytes").get<uint64_t>());
    EXPECT_EQ(j.at("file_bytes").get<uint64_t>(), std::filesystem::file_size(path));
  }
}

TEST(Inspect, Stories260KFactsAndMemoryEstimate) {
  const std::string model = reference_path("stories260K", "model.gguf");
  Result r = inspect("--json " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["hparams"]["block_count"], 5);
  EXPECT_EQ(j["hparams"]["attention.head_count_kv"], 4);
  EXPECT_EQ(j["tensors"].size(), 48u);
  EXPECT_EQ(j["tokenizer"]["model"], "llama");
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 512);
  EXPECT_EQ(j["tokenizer"]["bos_id"], 1);
  EXPECT_EQ(j["tokenizer"]["bos_text"], "<s>");
  EXPECT_EQ(j["tokenizer"]["eos_text"], "</s>");
  EXPECT_TRUE(j["tokenizer"]["pad_id"].is_null());  // stored as 0xFFFFFFFF: unset
  // Long arrays are summarized, not dumped.
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.scores"]["count"], 512);
  EXPECT_LE(j["metadata"]["tokenizer.ggml.scores"]["head"].size(), 16u);
  // K and V of 5 layers x 4 kv heads x head dim 8, f16: 5 * 2 * 32 * 2 = 640 bytes a token.
  // The paged pool holds the context plus at most a couple of pages per sequence.
  const auto& m = j["memory"];
  EXPECT_EQ(m["kv_bytes_per_token"], 640);
  EXPECT_GE(m["kv_bytes"].get<uint64_t>(), 640u * 4096);
  EXPECT_LE(m["kv_bytes"].get<uint64_t>(), 640u * (4096 + 64));
  EXPECT_EQ(m["total_bytes"].get<uint64_t>(), j["weight_bytes"].get<uint64_t>() + m["kv_bytes"].get<uint64_t>());

  Result r2 = inspect("--json --ctx 1024 --parallel 2 --kv-type-k f32 --kv-type-v bf16 " + model);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  nlohmann::json m2 = nlohmann::json::parse(r2.out)["memory"];
  const uint64_t per_token = 5 * (32 * 4 + 32 * 2);  // K f32, V bf16
  EXPECT_EQ(m2["kv_bytes_per_token"], per_token);
  EXPECT_GE(m2["kv_bytes"].get<uint64_t>(), per_token * 2048);
  EXPECT_LE(m2["kv_bytes"].get<uint64_t>(), per_token * (2048 + 2 * 64));

  Result text = inspect(model);
  EXPECT_NE(text.out.find("block_count"), std::string::npos);
  EXPECT_NE(text.out.find("token_embd.weight"), std::string::npos);
  EXPECT_NE(text.out.find("[64, 512]"), std::string::npos);
  EXPECT_NE(text.out.find("bos   1 \"<s>\""), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("pad   unset"), std::string::npos) << text.out;
}

TEST(Inspect, CorruptFilesExitOneWithAMessage) {
  const auto bytes = slurp(reference_path("stories260K", "model.gguf"));
  struct Case { std::string name; std::string data; };
  std::string flipped = bytes;
  flipped[0] = 'X';
  std::string huge_count = bytes;
  for (int i = 16; i < 24; ++i) huge_count[i] = '\x7f';
  const std::vector<Case> cases = {{"truncated-header", bytes.substr(0, 100)},
                                   {"truncated-data", bytes.substr(0, bytes.size() - 1000)},
                                   {"bad-magic", flipped},
                                   {"huge-count", huge_count},
                                   {"empty", ""}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = temp_dir() + "/" + c.name + ".gguf";
    std::ofstream(path, std::ios::binary) << c.data;
    Result r = inspect(path);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("keel inspect: error: " + path + ": offset "), std::string::npos) << r.err;
    Result js = inspect("--json " + path);
    EXPECT_EQ(js.exit_code, 1) << js.err;
  }
  Result missing = inspect(temp_dir() + "/no-such.gguf");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no-such.gguf"), std::string::npos) << missing.err;
}

TEST(Inspect, BadFlagsExitTwo) {
  const std::string model = reference_path("stories260K", "model.gguf");
  for (const std::string& args : {std::string(""), "--bogus " + model, "--ctx 0 " + model, "--ctx abc " + model,
                                 "--parallel 0 " + model, "--kv-type-k q4_K " + model, "--kv-type-v nope " + model}) {
    SCOPED_TRACE(args);
    Result r = inspect(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  Result help = inspect("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--kv-type-k"), std::string::npos);
}

}  // namespace
}  // namespace keel::test
