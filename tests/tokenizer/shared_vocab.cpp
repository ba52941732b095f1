#include "shared_vocab.h"

#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "gguf/gguf.h"
#include "support/paths.h"

namespace keel::test {

namespace {

const tokenizer::Tokenizer& load_cached(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[path];
  if (!slot) {
    gguf::GgufFile file(path);
    slot = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(file));
  }
  return *slot;
}

std::string vocab_path(const std::string& name) {
  return shared_dir() + "/reference/vocab/ggml-vocab-" + name + ".gguf";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

const tokenizer::Tokenizer& reference_vocab(const std::string& name) {
  return load_cached(vocab_path(name));
}

const tokenizer::Tokenizer& stories_vocab() {
  return load_cached(reference_path("stories260K", "model.gguf"));
}

std::vector<VocabCase> reference_vectors(const std::string& name) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string inp = read_all(vocab_path(name) + ".inp");
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;  // the separator also ends the file
    inputs.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream out(read_all(vocab_path(name) + ".out"));
  std::vector<VocabCase> cases;
  std::string line;
  for (const std::string& input : inputs) {
    if (!std::getline(out, line))
      throw std::runtime_error(name + ".out has fewer lines than inputs");
    VocabCase c{input, {}};
    std::istringstream ids(line);
    for (long id; ids >> id;) c.expected.push_back(static_cast<tokenizer::TokenId>(id));
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace keel::test
