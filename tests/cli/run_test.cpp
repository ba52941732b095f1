// `keel run` through the built binary: the greedy continuation of stories260K equals the
// reference implementation's text, and bad input fails cleanly.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "support/command.h"
#include "support/paths.h"

namespace keel::test {
namespace {

std::string keel(const std::string& args) { return std::string(KEEL_BIN) + " run " + args; }

TEST(RunCommand, GreedyStoriesMatchesReferenceText) {
  std::ifstream in(reference_path("stories260K", "generate.json"));
  ASSERT_TRUE(in) << "missing generate.json";
  const auto ref = nlohmann::json::parse(in);
  const std::string model = reference_path("stories260K", "model.gguf");
  for (const char* fa : {"on", "off"}) {
    CommandResult r = run_command(keel("-m " + model + " -p \"Once upon a time\" -n 64 --temp 0 -fa " + fa));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // stdout: the prompt, the continuation, one newline.
    EXPECT_EQ(r.out, ref["full_text"].get<std::string>() + "\n") << "flash attention " << fa;
    EXPECT_NE(r.err.find("generated 64 tokens"), std::string::npos) << r.err;
  }
}

TEST(RunCommand, SameSeedSameText) {
  const std::string model = reference_path("stories260K", "model.gguf");
  const std::string args = "-m " + model + " -p \"Once upon a time\" -n 32 --temp 0.9 -s 7";
  CommandResult a = run_command(keel(args));
  CommandResult b = run_command(keel(args));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(RunCommand, BadInputFailsCleanly) {
  CommandResult missing = run_command(keel("-m /nonexistent.gguf -p hi"));
  EXPECT_EQ(missing.exit_code, 2) << missing.err;  // CLI11's ExistingFile check
  CommandResult bad_type = run_command(
      keel("-m " + reference_path("stories260K", "model.gguf") + " -p hi -ctk q9_9"));
  EXPECT_EQ(bad_type.exit_code, 1);
  EXPECT_NE(bad_type.err.find("q9_9"), std::string::npos) << bad_type.err;
  CommandResult not_gguf = run_command(keel("-m " + reference_path("stories260K", "tokens.txt") + " -p hi"));
  EXPECT_EQ(not_gguf.exit_code, 1);
  EXPECT_EQ(not_gguf.signal, 0);
}

}  // namespace
}  // namespace keel::test
