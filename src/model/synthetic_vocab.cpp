// Tokenizer sections for synthetic models. See synthetic_vocab.h.
#include "model/synthetic_vocab.h"

#include "core/error.h"

namespace keel::model::synthetic {
namespace {

// GPT-2's byte alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes
// for U+0100.. in byte order.
std::string byte_symbol(int b) {
  const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  int cp = b;
  if (!printable) {
    int rank = 0;
    for (int c = 0; c < b; ++c) {
      rank += !((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff));
    }
    cp = 0x100 + rank;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

}  // namespace

Metadata builtin_vocab(int64_t pad_to) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_symbol(b));
  const std::string sp = byte_symbol(' ');
  const std::vector<std::pair<std::string, std::string>> merges = {
      {sp, "t"}, {sp, "a"}, {"h", "e"}, {"i", "n"}, {"r", "e"}, {"o", "n"}, {sp + "t", "he"},
      {"e", "r"}, {sp, "s"}, {"a", "t"}, {"e", "n"}, {"o", "u"}, {sp, "w"}, {sp, "o"},
      {"n", "d"}, {sp + "a", "nd"}, {sp, "i"}, {"i", "s"}, {sp + "w", "as"}, {"a", "s"}};
  std::vector<std::string> merge_text;
  for (const auto& [a, b] : merges) {
    merge_text.push_back(a + " " + b);
    tokens.push_back(a + b);
  }
  std::vector<int32_t> types(tokens.size(), 1);  // normal
  const auto bos = static_cast<uint32_t>(tokens.size());
  tokens.push_back("<s>");
  tokens.push_back("</s>");
  types.push_back(3);  // control
  types.push_back(3);
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < pad_to; ++i) {
    tokens.push_back("<unused" + std::to_string(i) + ">");
    types.push_back(5);  // unused
  }
  Metadata m;
  m.emplace_back("tokenizer.ggml.model", gguf::Value::str("gpt2"));
  m.emplace_back("tokenizer.ggml.pre", gguf::Value::str("default"));
  m.emplace_back("tokenizer.ggml.tokens", gguf::Value::array(tokens));
  m.emplace_back("tokenizer.ggml.token_type", gguf::Value::array(types));
  m.emplace_back("tokenizer.ggml.merges", gguf::Value::array(merge_text));
  m.emplace_back("tokenizer.ggml.bos_token_id", gguf::Value::u32(bos));
  m.emplace_back("tokenizer.ggml.eos_token_id", gguf::Value::u32(bos + 1));
  m.emplace_back("tokenizer.ggml.add_bos_token", gguf::Value::boolean(true));
  return m;
}

Metadata copied_vocab(const std::string& path) {
  const gguf::GgufFile f(path);
  Metadata m;
  for (const auto& [key, value] : f.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) m.emplace_back(key, value);
  }
  const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->array_size() == 0) {
    throw Error(ErrorCode::kInvalidArgument, path + ": no tokenizer.ggml.tokens to copy a vocabulary from");
  }
  return m;
}

int64_t vocab_size(const Metadata& m) {
  for (const auto& [key, value] : m) {
    if (key == "tokenizer.ggml.tokens") return static_cast<int64_t>(value.array_size());
  }
  return 0;
}

int64_t builtin_vocab_size() {
  static const int64_t n = vocab_size(builtin_vocab(0));
  return n;
}

}  // namespace keel::model::synthetic
