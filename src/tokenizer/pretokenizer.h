// Pre-tokenizer for byte-level BPE: splits text into words with the regular expressions
// of a `tokenizer.ggml.pre` value, before merges run inside each word.
//
// A pre-tokenizer is a sequence of regexes. Each one splits every current piece into its
// matches and the text between them (both kept, in order), like Hugging Face's Split
// pre-tokenizer with "isolated" behaviour. Regexes are PCRE2 with UTF and Unicode
// properties (\p{L}, \s match Unicode), JIT-compiled when PCRE2 has a JIT.
//
// Thread-safety: immutable after construction; split() may run concurrently (each call
// uses its own match data). Movable, not copyable.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keel::tokenizer {

class PreTokenizer {
 public:
  // The regexes for `pre` (e.g. "gpt-2", "llama-bpe", "qwen2", "deepseek-v3"). An unknown
  // name logs a warning and falls back to the GPT-2 split; name() then says "gpt-2".
  static PreTokenizer for_name(const std::string& pre);
  // Custom regexes (tests, experiments). Throws keel::Error(kInvalidArgument) when one
  // does not compile, naming the pattern and PCRE2's message.
  static PreTokenizer from_patterns(std::string name, const std::vector<std::string>& patterns);
  // True when `pre` names a known pre-tokenizer.
  static bool is_known(const std::string& pre);

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  const std::string& name() const { return name_; }
  // Llama 3 / Tekken: a whole word that is a token skips the merges.
  bool ignore_merges() const { return ignore_merges_; }
  // Precondition: text is valid UTF-8. The pieces are views into text, non-empty, and
  // concatenate to text.
  std::vector<std::string_view> split(std::string_view text) const;

  struct Regex;  // one compiled pattern (opaque; pretokenizer.cpp)

 private:
  PreTokenizer() = default;
  std::string name_;
  bool ignore_merges_ = false;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace keel::tokenizer
