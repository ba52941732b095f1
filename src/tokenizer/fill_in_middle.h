// Fill-in-the-middle prompts (OpenAI completions' `suffix`): code models trained on it mark
// the text before and after the hole with special tokens and generate the middle.
//
// Recognised spellings (found by token text, as no GGUF key names them reliably):
//   <|fim_prefix|> <|fim_suffix|> <|fim_middle|>        Qwen2.5-Coder, CodeGemma
//   <fim_prefix>   <fim_suffix>   <fim_middle>          StarCoder / StarCoder2, SantaCoder
//   <｜fim▁begin｜> <｜fim▁hole｜>   <｜fim▁end｜>           DeepSeek-Coder
//   ▁<PRE>         ▁<SUF>         ▁<MID>                Code Llama
// The prompt is prefix-suffix-middle order: [BOS] PRE prefix SUF suffix MID, the texts
// encoded without special-token parsing (a user's "<fim_middle>" stays text).
//
// Repository-level context (llama-server's /infill `input_extra`): other files' text goes
// before PRE. With a file-separator token (<|file_sep|>, <file_sep>, <|file_separator|>)
// each chunk is SEP filename\n text, and the hole's own file gets SEP "filename\n" after
// them; with a repo-name token (<|repo_name|>, <repo_name>, <reponame>) the context starts
// REPO "myproject\n"; without a separator, chunks are joined by "\n\n--- snippet ---\n\n".
// These are llama-server's spellings, so a model prompted by either server sees the same.
//
// Contract: fill_in_middle() returns nullopt when the vocabulary has none of the triples;
// throws like Tokenizer::encode on invalid UTF-8. Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace keel::tokenizer {

std::optional<std::vector<TokenId>> fill_in_middle(const Tokenizer& tok, std::string_view prefix,
                                                   std::string_view suffix);

struct FimChunk {
  std::string_view filename;
  std::string_view text;
};

struct FimRequest {
  std::string_view prefix, suffix;
  std::vector<FimChunk> extra;  // repository context, oldest first
  std::string_view middle;      // text the middle starts with (after MID)
  // Token budgets (< 0: all): the prefix keeps its last `prefix_max` tokens, the suffix
  // its first `suffix_max`, the repository context its last `extra_max`.
  int64_t prefix_max = -1, suffix_max = -1, extra_max = -1;
};

std::optional<std::vector<TokenId>> fill_in_middle(const Tokenizer& tok, const FimRequest& request);

}  // namespace keel::tokenizer
