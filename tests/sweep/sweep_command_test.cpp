// `keel sweep` through the built binary on the qwen3 reference model: a crashing
// configuration, one refused by the memory plan and a hung one each show in their own
// row while the others complete; tokens are counted exactly; the JSON parses.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "support/command.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace keel::test {
namespace {

const char* kPrompt = "Once upon a time there was a little girl who liked to play in the park with her dog.";

std::string model() { return reference_path("qwen3", "model.gguf"); }

std::string prompt_file() {
  const std::string path = temp_dir() + "/prompt.txt";
  std::ofstream(path) << kPrompt;
  return path;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

int64_t prompt_token_count() {
  const gguf::GgufFile file(model());
  return static_cast<int64_t>(tokenizer::Tokenizer::from_gguf(file).encode(kPrompt, {}).size());
}

TEST(SweepCommand, FailuresStayInTheirRows) {
  const std::string json_path = temp_dir() + "/crash.json";
  // Row 2 crashes after loading (injected SIGSEGV); row 3 asks for a context whose KV
  // cache cannot fit in 64 MiB, so the plan refuses it before allocating.
  const CommandResult r = run_command(
      "KEEL_SWEEP_CRASH=ctk=q4_0 " + std::string(KEEL_BIN) + " sweep -m " + model() + " --prompt-file " +
      prompt_file() + " -n 8 -t 1 --mem-limit 64M --timeout 120 --json-out " + json_path +
      " --configs 'fa=on,ctk=f16,c=256;fa=off,ctk=q4_0,c=256;fa=on,ctk=f16,c=1024k;fa=off,ctk=q8_0,c=256,np=2'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = read_json(json_path);
  ASSERT_EQ(j["rows"].size(), 4u);
  const auto& rows = j["rows"];
  const int64_t n_prompt = prompt_token_count();

  EXPECT_EQ(rows[0]["outcome"], "ok") << rows[0].dump();
  EXPECT_EQ(rows[0]["plan"]["fits"], true);
  EXPECT_EQ(rows[0]["prompt_tokens"], n_prompt);
  EXPECT_EQ(rows[0]["generated_tokens"], 8);
  EXPECT_EQ(rows[0]["same_as_baseline"], true);
  EXPECT_GT(rows[0]["peak_rss_bytes"].get<int64_t>(), 0);
  EXPECT_FALSE(rows[0]["text"].get<std::string>().empty());

  EXPECT_EQ(rows[1]["outcome"], "signal") << rows[1].dump();
  EXPECT_NE(rows[1]["detail"].get<std::string>().find("SIGSEGV"), std::string::npos);
  EXPECT_EQ(rows[1]["plan"]["fits"], true);  // the verdict came before the crash

  EXPECT_EQ(rows[2]["outcome"], "refused") << rows[2].dump();
  EXPECT_EQ(rows[2]["plan"]["fits"], false);
  EXPECT_GT(rows[2]["plan"]["total_bytes"].get<uint64_t>(), rows[2]["plan"]["limit_bytes"].get<uint64_t>());
  EXPECT_TRUE(rows[2]["same_as_baseline"].is_null());

  EXPECT_EQ(rows[3]["outcome"], "ok") << rows[3].dump();
  EXPECT_EQ(rows[3]["prompt_tokens"], n_prompt);
  EXPECT_EQ(rows[3]["generated_tokens"], 8);
  EXPECT_EQ(rows[3]["parallel_same"], true);  // both slots, same greedy text

  // The Markdown table on stdout has a header, a rule and one line per row.
  EXPECT_NE(r.out.find("killed by SIGSEGV"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("refused by plan"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6) << r.out;
}

TEST(SweepCommand, HangIsKilledAtTheTimeoutAndStreamMatches) {
  const std::string json_path = temp_dir() + "/hang.json";
  const CommandResult r = run_command(
      "KEEL_SWEEP_HANG=fa=off " + std::string(KEEL_BIN) + " sweep -m " + model() + " --prompt-file " +
      prompt_file() + " -n 6 -t 1 -c 256 --fa on,off --stream on,off --timeout 10 -o json --json-out " + json_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j, read_json(json_path));
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& ok = j["rows"][0];
  EXPECT_EQ(ok["outcome"], "ok") << ok.dump();
  EXPECT_EQ(ok["generated_tokens"], 6);
  ASSERT_TRUE(ok.contains("stream")) << ok.dump();
  EXPECT_EQ(ok["stream"]["streamed_equals_whole"], true);
  EXPECT_EQ(ok["stream"]["equals_engine"], true);
  EXPECT_GE(ok["stream"]["stream_chunks"].get<int64_t>(), 1);
  EXPECT_EQ(j["rows"][1]["outcome"], "timeout") << j["rows"][1].dump();
}

TEST(SweepCommand, KvQualityColumn) {
  const std::string json_path = temp_dir() + "/quality.json";
  const CommandResult r = run_command(std::string(KEEL_BIN) + " sweep -m " + model() + " --prompt-file " +
                                      prompt_file() + " -n 6 -t 1 -c 256 --ctk f16,q8_0,q4_0 --kv-quality --json-out " +
                                      json_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = read_json(json_path);
  EXPECT_EQ(j["kv_quality_baseline"], "f32/f32");
  ASSERT_EQ(j["rows"].size(), 3u);
  for (const auto& row : j["rows"]) {
    ASSERT_TRUE(row["kv_quality"].is_object()) << row.dump();
    EXPECT_EQ(row["kv_quality"]["positions"], 6);
    EXPECT_EQ(row["kv_quality"]["ctk"], row["config"]["ctk"]);
  }
  EXPECT_LT(j["rows"][0]["kv_quality"]["mean_kl"].get<double>(), j["rows"][2]["kv_quality"]["mean_kl"].get<double>());
  EXPECT_NE(r.out.find("KV vs f32/f32"), std::string::npos) << r.out;
}

TEST(SweepCommand, BadFlagsFailBeforeAnyBoot) {
  const std::string base = std::string(KEEL_BIN) + " sweep -m " + model() + " --prompt-file " + prompt_file();
  const CommandResult bad_type = run_command(base + " --ctk f16,q9_9");
  EXPECT_EQ(bad_type.exit_code, 1);
  EXPECT_NE(bad_type.err.find("q9_9"), std::string::npos) << bad_type.err;
  const CommandResult bad_baseline = run_command(base + " --baseline 3");
  EXPECT_EQ(bad_baseline.exit_code, 1);
  EXPECT_NE(bad_baseline.err.find("--baseline"), std::string::npos) << bad_baseline.err;
  const CommandResult bad_limit = run_command(base + " --mem-limit lots");
  EXPECT_EQ(bad_limit.exit_code, 1);
  EXPECT_NE(bad_limit.err.find("lots"), std::string::npos) << bad_limit.err;
}

}  // namespace
}  // namespace keel::test
