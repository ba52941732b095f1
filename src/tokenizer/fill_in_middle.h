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

}  // namespace keel::tokenizer
