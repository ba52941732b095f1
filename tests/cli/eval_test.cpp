// `keel eval` through the built binary (KEEL_BIN): logits file layout and values against a
// reference set, perplexity on stderr, and clean errors for bad input.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/command.h"
#include "support/paths.h"

namespace keel::test {
namespace {

using Result = CommandResult;

Result run(const std::string& args) { return run_command(std::string(KEEL_BIN) + " eval " + args); }

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<float> v(in ? static_cast<size_t>(in.tellg()) / 4 : 0);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

TEST(Eval, WritesReferenceLayoutLogitsAndPerplexity) {
  const std::string model = reference_path("qwen2", "model.gguf");
  const std::string tokens = reference_path("qwen2", "tokens.txt");
  const auto ref = read_f32(reference_path("qwen2", "logits.f32"));
  const std::string out_batch = temp_dir() + "/batch.f32", out_seq = temp_dir() + "/seq.f32";

  Result r = run("-m " + model + " --tokens " + tokens + " -o " + out_batch + " -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("perplexity: "), std::string::npos) << r.err;
  const auto batch = read_f32(out_batch);
  ASSERT_EQ(batch.size(), ref.size());  // [48][512]
  // Default f16 K/V like the reference: within ~0.02.
  EXPECT_LE(max_abs_diff(batch, ref), 0.02);

  r = run("-m " + model + " --tokens " + tokens + " -o " + out_seq +
          " --one-by-one --flash-attn on -ctk f32 -ctv bf16 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto seq = read_f32(out_seq);
  ASSERT_EQ(seq.size(), ref.size());
  EXPECT_LE(max_abs_diff(seq, ref), 0.1);

  // Perplexity is the exp of the mean NLL of each next token; recompute from the file.
  std::ifstream tin(tokens);
  std::vector<int> ids;
  for (int id; tin >> id;) ids.push_back(id);
  double nll = 0;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const float* row = batch.data() + i * 512;
    double mx = row[0], sum = 0;
    for (int j = 0; j < 512; ++j) mx = std::max(mx, double(row[j]));
    for (int j = 0; j < 512; ++j) sum += std::exp(row[j] - mx);
    nll -= row[ids[i + 1]] - mx - std::log(sum);
  }
  r = run("-m " + model + " --tokens " + tokens + " -o " + out_batch);
  const double ppl = std::exp(nll / (ids.size() - 1));
  const auto pos = r.err.find("perplexity: ");
  ASSERT_NE(pos, std::string::npos);
  EXPECT_NEAR(std::stod(r.err.substr(pos + 12)), ppl, 1e-3 * ppl);
}

TEST(Eval, BadInputIsAnErrorNotACrash) {
  const std::string model = reference_path("qwen2", "model.gguf");
  const std::string bad = temp_dir() + "/bad_tokens.txt";
  std::ofstream(bad) << "1\n403\nhello\n";
  Result r = run("-m " + model + " --tokens " + bad + " -o " + temp_dir() + "/x.f32");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a token id"), std::string::npos) << r.err;

  std::ofstream(bad) << "1\n99999\n";
  r = run("-m " + model + " --tokens " + bad + " -o " + temp_dir() + "/x.f32");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("outside the vocabulary"), std::string::npos) << r.err;

  r = run("-m " + model + " --tokens " + reference_path("qwen2", "tokens.txt") + " -o " +
          temp_dir() + "/x.f32 -ctk nonsense");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nonsense"), std::string::npos) << r.err;

  r = run("-m /nonexistent.gguf --tokens " + reference_path("qwen2", "tokens.txt") + " -o " +
          temp_dir() + "/x.f32");
  EXPECT_EQ(r.exit_code, 1);
}

}  // namespace
}  // namespace keel::test
