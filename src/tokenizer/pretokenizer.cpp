#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/pretokenizer_patterns.h"

namespace keel::tokenizer {

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;  // JIT-compiled when available; pcre2_match then uses it
  ~Regex() { pcre2_code_free(code); }
};

namespace {

bool pcre2_has_jit() {
  static const bool has = [] {
    uint32_t jit = 0;
    return pcre2_config(PCRE2_CONFIG_JIT, &jit) >= 0 && jit != 0;
  }();
  return has;
}

const PreTokenizerPatterns* find_patterns(const std::string& pre) {
  for (const auto& set : known_pre_tokenizers()) {
    for (const auto& n : set.names) {
      if (n == pre) return &set;
    }
  }
  return nullptr;
}

// Runs one match at `start`; returns false when there is no further match. A JIT stack
// overflow on pathological input retries with the interpreter instead of failing.
bool next_match(const PreTokenizer::Regex& re, std::string_view text, size_t start,
                pcre2_match_data* md, size_t& m_begin, size_t& m_end) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = pcre2_match(re.code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    rc = pcre2_match(re.code, subject, text.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                     nullptr);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(rc, buf, sizeof(buf));
    throw Error(ErrorCode::kInternal,
                std::string("pre-tokenizer regex match failed: ") + reinterpret_cast<char*>(buf));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  m_begin = ov[0];
  m_end = ov[1];
  return true;
}

// Splits one piece into matches and the gaps between them, appending non-empty parts.
void split_piece(const PreTokenizer::Regex& re, std::string_view piece, pcre2_match_data* md,
                 std::vector<std::string_view>& out) {
  size_t pos = 0;      // where the next search starts
  size_t emitted = 0;  // end of what has been appended
  while (pos < piece.size()) {
    size_t b = 0, e = 0;
    if (!next_match(re, piece, pos, md, b, e)) break;
    if (e == b) {
      // An empty match splits nothing; step over one whole character.
      pos = b + 1;
      while (pos < piece.size() && (static_cast<uint8_t>(piece[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (b > emitted) out.push_back(piece.substr(emitted, b - emitted));
    out.push_back(piece.substr(b, e - b));
    emitted = pos = e;
  }
  if (emitted < piece.size()) out.push_back(piece.substr(emitted));
}

std::unique_ptr<PreTokenizer::Regex> compile(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  // DOLLAR_ENDONLY: "$" means the end of the piece, not also before a final newline.
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_off, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof(buf));
    throw Error(ErrorCode::kInvalidArgument, "pre-tokenizer regex '" + pattern + "' at offset " +
                                                 std::to_string(err_off) + ": " +
                                                 reinterpret_cast<char*>(buf));
  }
  auto re = std::make_unique<PreTokenizer::Regex>();
  re->code = code;
  if (pcre2_has_jit()) pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // failure: interpreter
  return re;
}

}  // namespace

PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

bool PreTokenizer::is_known(const std::string& pre) { return find_patterns(pre) != nullptr; }

PreTokenizer PreTokenizer::from_patterns(std::string name,
                                         const std::vector<std::string>& patterns) {
  PreTokenizer p;
  p.name_ = std::move(name);
  for (const auto& pat : patterns) p.regexes_.push_back(compile(pat));
  return p;
}

PreTokenizer PreTokenizer::for_name(const std::string& pre) {
  const PreTokenizerPatterns* set = find_patterns(pre);
  std::string name = pre;
  if (!set) {
    log_warn("tokenizer: unknown pre-tokenizer '" + pre + "'; using the GPT-2 split");
    name = "gpt-2";
    set = find_patterns(name);
  }
  PreTokenizer p = from_patterns(name, set->patterns);
  p.ignore_merges_ = set->ignore_merges;
  return p;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  for (const auto& re : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
    if (!md) throw Error(ErrorCode::kOutOfMemory, "pre-tokenizer: cannot allocate match data");
    std::vector<std::string_view> next;
    next.reserve(pieces.size() * 2);
    try {
      for (std::string_view piece : pieces) split_piece(*re, piece, md, next);
    } catch (...) {
      pcre2_match_data_free(md);
      throw;
    }
    pcre2_match_data_free(md);
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace keel::tokenizer
