#include "tiny_vocab.h"

#include "support/paths.h"
#include "tokenizer/byte_unicode.h"

namespace keel::test {

std::string write_tiny_vocab(const std::string& name, const TinyVocabSpec& spec) {
  gguf::GgufWriter w;
  w.set("general.architecture", gguf::Value::str("llama"));
  w.set("tokenizer.ggml.model", gguf::Value::str(spec.model));
  if (!spec.pre.empty()) w.set("tokenizer.ggml.pre", gguf::Value::str(spec.pre));
  w.set("tokenizer.ggml.tokens", gguf::Value::array(spec.tokens));
  if (!spec.types.empty()) w.set("tokenizer.ggml.token_type", gguf::Value::array(spec.types));
  if (!spec.scores.empty()) w.set("tokenizer.ggml.scores", gguf::Value::array(spec.scores));
  if (!spec.merges.empty()) w.set("tokenizer.ggml.merges", gguf::Value::array(spec.merges));
  for (const auto& [key, value] : spec.extra) w.set("tokenizer.ggml." + key, value);
  const std::string path = temp_dir() + "/" + name + ".gguf";
  w.write(path);
  return path;
}

TinyVocabSpec byte_level_spec(const std::vector<std::string>& merges) {
  TinyVocabSpec spec;
  for (int b = 0; b < 256; ++b)
    spec.tokens.push_back(tokenizer::byte_to_unicode(static_cast<uint8_t>(b)));
  for (const std::string& m : merges) {
    std::string joined = m;
    joined.erase(joined.find(' '), 1);
    spec.tokens.push_back(joined);
  }
  spec.merges = merges;
  return spec;
}

}  // namespace keel::test
