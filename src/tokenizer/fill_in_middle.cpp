#include "tokenizer/fill_in_middle.h"

namespace keel::tokenizer {
namespace {

struct FimSpelling {
  const char* prefix;
  const char* suffix;
  const char* middle;
};

constexpr FimSpelling kSpellings[] = {
    {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
    {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
    {"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>",
     "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>"},
    {"\xE2\x96\x81<PRE>", "\xE2\x96\x81<SUF>", "\xE2\x96\x81<MID>"},
};

}  // namespace

std::optional<std::vector<TokenId>> fill_in_middle(const Tokenizer& tok, std::string_view prefix,
                                                   std::string_view suffix) {
  for (const FimSpelling& s : kSpellings) {
    const TokenId pre = tok.find_token(s.prefix), suf = tok.find_token(s.suffix), mid = tok.find_token(s.middle);
    if (pre == kNoToken || suf == kNoToken || mid == kNoToken) continue;
    EncodeOptions plain;
    plain.add_bos = false;
    plain.add_eos = false;
    std::vector<TokenId> out;
    if (tok.add_bos_default() && tok.special_ids().bos != kNoToken) out.push_back(tok.special_ids().bos);
    out.push_back(pre);
    for (TokenId t : tok.encode(prefix, plain)) out.push_back(t);
    out.push_back(suf);
    for (TokenId t : tok.encode(suffix, plain)) out.push_back(t);
    out.push_back(mid);
    return out;
  }
  return std::nullopt;
}

}  // namespace keel::tokenizer
