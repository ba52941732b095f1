#include "tokenizer/fill_in_middle.h"

#include <algorithm>
#include <string>

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

// Repository-level markers, as llama.cpp finds them by text.
constexpr const char* kRepoSpellings[] = {"<|repo_name|>", "<repo_name>", "<reponame>"};
constexpr const char* kFileSepSpellings[] = {"<|file_sep|>", "<file_sep>", "<|file_separator|>"};

template <size_t N>
TokenId first_token(const Tokenizer& tok, const char* const (&spellings)[N]) {
  for (const char* s : spellings) {
    if (const TokenId t = tok.find_token(s); t != kNoToken) return t;
  }
  return kNoToken;
}

}  // namespace

std::optional<std::vector<TokenId>> fill_in_middle(const Tokenizer& tok, std::string_view prefix,
                                                   std::string_view suffix) {
  FimRequest r;
  r.prefix = prefix;
  r.suffix = suffix;
  return fill_in_middle(tok, r);
}

std::optional<std::vector<TokenId>> fill_in_middle(const Tokenizer& tok, const FimRequest& r) {
  for (const FimSpelling& s : kSpellings) {
    const TokenId pre = tok.find_token(s.prefix), suf = tok.find_token(s.suffix), mid = tok.find_token(s.middle);
    if (pre == kNoToken || suf == kNoToken || mid == kNoToken) continue;
    EncodeOptions plain;
    plain.add_bos = false;
    plain.add_eos = false;
    auto text = [&](std::string_view t) { return tok.encode(t, plain); };
    auto append = [](std::vector<TokenId>& to, const std::vector<TokenId>& from, size_t first, size_t last) {
      to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(first), from.begin() + static_cast<std::ptrdiff_t>(last));
    };
    auto append_text = [&](std::vector<TokenId>& to, std::string_view t) {
      const auto ids = text(t);
      append(to, ids, 0, ids.size());
    };
    auto take = [](int64_t max, size_t n) { return max < 0 ? n : std::min(n, static_cast<size_t>(max)); };

    std::vector<TokenId> extra;
    if (!r.extra.empty()) {
      const TokenId repo = first_token(tok, kRepoSpellings), sep = first_token(tok, kFileSepSpellings);
      if (repo != kNoToken) {
        extra.push_back(repo);
        append_text(extra, "myproject\n");
      }
      for (const FimChunk& c : r.extra) {
        if (sep != kNoToken) {
          extra.push_back(sep);
          append_text(extra, std::string(c.filename.empty() ? "tmp" : c.filename) + "\n");
        } else {
          append_text(extra, "\n\n--- snippet ---\n\n");
        }
        append_text(extra, c.text);
      }
      if (sep != kNoToken) {  // the hole's own file
        extra.push_back(sep);
        append_text(extra, "filename\n");
      }
    }
    std::vector<TokenId> out;
    if (tok.add_bos_default() && tok.special_ids().bos != kNoToken) out.push_back(tok.special_ids().bos);
    append(out, extra, extra.size() - take(r.extra_max, extra.size()), extra.size());
    out.push_back(pre);
    const auto p = text(r.prefix);
    append(out, p, p.size() - take(r.prefix_max, p.size()), p.size());
    out.push_back(suf);
    const auto x = text(r.suffix);
    append(out, x, 0, take(r.suffix_max, x.size()));
    out.push_back(mid);
    append_text(out, r.middle);
    return out;
  }
  return std::nullopt;
}

}  // namespace keel::tokenizer
