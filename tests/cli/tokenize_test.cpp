// `keel tokenize` through the built binary (KEEL_BIN): ids and pieces, flags, clean errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/command.h"
#include "support/paths.h"

namespace keel::test {
namespace {

using Result = CommandResult;

Result run(const std::string& args) { return run_command(std::string(KEEL_BIN) + " tokenize " + args); }

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

const std::string kStories = reference_path("stories260K", "model.gguf");

TEST(Tokenize, StoriesPromptIdsAndPieces) {
  // ../shared/reference/stories260K/generate.json: BOS + 403 407 261 378.
  Result r = run("-m " + kStories + " -p 'Once upon a time' --ids-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n403\n407\n261\n378\n");

  r = run("-m " + kStories + " -p 'Once upon a time' --no-bos");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto l = lines(r.out);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].substr(0, 4), "403\t");
  std::string joined;  // the pieces, in quotes, spell the text with its space prefix
  for (const auto& line : l) {
    const size_t q = line.find('\'');
    ASSERT_NE(q, std::string::npos) << line;
    joined += line.substr(q + 1, line.size() - q - 2);
  }
  EXPECT_EQ(joined, " Once upon a time");
}

TEST(Tokenize, FileInputEqualsPromptAndEscapesControlBytes) {
  const std::string path = temp_dir() + "/tokenize_input.txt";
  std::ofstream(path, std::ios::binary) << "Once\nupon";
  Result from_file = run("-m " + kStories + " -f " + path);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  Result from_prompt = run("-m " + kStories + " -p \"$(printf 'Once\\nupon')\"");
  ASSERT_EQ(from_prompt.exit_code, 0) << from_prompt.err;
  EXPECT_EQ(from_file.out, from_prompt.out);
  EXPECT_NE(from_file.out.find("'\\n'"), std::string::npos) << from_file.out;  // escaped newline
}

TEST(Tokenize, ParseSpecialMatchesControlTokens) {
  const std::string phi = shared_dir() + "/reference/vocab/ggml-vocab-phi-3.gguf";
  Result parsed = run("-m " + phi + " -p '<|user|>hi' --no-bos --parse-special --ids-only");
  ASSERT_EQ(parsed.exit_code, 0) << parsed.err;
  EXPECT_EQ(lines(parsed.out).front(), "32010");  // <|user|>
  Result literal = run("-m " + phi + " -p '<|user|>hi' --no-bos --ids-only");
  ASSERT_EQ(literal.exit_code, 0) << literal.err;
  EXPECT_EQ(literal.out.find("32010"), std::string::npos);
  EXPECT_GT(lines(literal.out).size(), 3u);
}

TEST(Tokenize, ErrorsAreCleanExits) {
  Result r = run("-m " + kStories);  // neither -p nor -f
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run("-m " + temp_dir() + "/missing.gguf -p x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.gguf"), std::string::npos) << r.err;
  r = run("-m " + kStories + " -p \"$(printf 'bad \\377 byte')\"");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("UTF-8"), std::string::npos) << r.err;
  r = run("-m " + kStories + " -f " + temp_dir() + "/no_such_text.txt");
  EXPECT_EQ(r.exit_code, 1);
}

}  // namespace
}  // namespace keel::test
