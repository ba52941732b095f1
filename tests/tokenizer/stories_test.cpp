// stories260K against ../shared/reference/stories260K: the prompt's ids and the text of
// the reference's greedy continuation, decoded whole and streamed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "shared_vocab.h"
#include "support/paths.h"

namespace keel::tokenizer {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of a top-level string field in generate.json (only the escapes it uses).
std::string json_string_field(const std::string& json, const std::string& key) {
  const std::string marker = "\"" + key + "\": \"";
  size_t pos = json.find(marker);
  if (pos == std::string::npos) return "<missing " + key + ">";
  std::string out;
  for (pos += marker.size(); pos < json.size() && json[pos] != '"'; ++pos) {
    if (json[pos] != '\\') {
      out += json[pos];
      continue;
    }
    const char e = json[++pos];
    out += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // \" \\ \/ map to themselves
  }
  return out;
}

std::vector<TokenId> read_ids(const std::string& path) {
  std::ifstream in(path);
  std::vector<TokenId> ids;
  for (TokenId id; in >> id;) ids.push_back(id);
  return ids;
}

TEST(Stories, ReferenceContinuationDecodesToItsText) {
  const Tokenizer& tok = test::stories_vocab();
  const std::string json = slurp(test::reference_path("stories260K", "generate.json"));
  const auto all = read_ids(test::reference_path("stories260K", "generate-tokens.txt"));
  ASSERT_EQ(all.size(), 5u + 64u);  // BOS + 4 prompt tokens + 64 generated
  const std::vector<TokenId> prompt(all.begin(), all.begin() + 5);
  const std::vector<TokenId> generated(all.begin() + 5, all.end());

  EXPECT_EQ(tok.encode(json_string_field(json, "prompt")), prompt);
  const DecodeOptions whole{.render_special = false, .strip_space_prefix = true};
  EXPECT_EQ(tok.decode(all, whole), json_string_field(json, "full_text"));
  // A continuation keeps its first token's space (here it starts with ",").
  EXPECT_EQ(tok.decode(generated), json_string_field(json, "generated_text"));

  StreamDecoder stream(tok);
  std::string streamed;
  for (TokenId id : generated) streamed += stream.push(id);
  streamed += stream.finish();
  EXPECT_EQ(streamed, json_string_field(json, "generated_text"));
}

}  // namespace
}  // namespace keel::tokenizer
