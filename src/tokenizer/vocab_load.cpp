// Reading tokenizer.ggml.* metadata into a Vocab: arrays, special ids, flags, merges.

#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf.h"
#include "tokenizer/vocab.h"

namespace keel::tokenizer {

void derive_tables(Vocab& v);  // vocab_tables.cpp

namespace {

const std::string kPrefix = "tokenizer.ggml.";

Error invalid(const gguf::GgufFile& f, const std::string& key, const std::string& why) {
  return Error(ErrorCode::kInvalidFile, f.path() + ": " + kPrefix + key + ": " + why);
}

const gguf::Value* find_array(const gguf::GgufFile& f, const std::string& key, bool required) {
  const gguf::Value* v = f.find(kPrefix + key);
  if (!v) {
    if (required) throw Error(ErrorCode::kNotFound, f.path() + ": missing " + kPrefix + key);
    return nullptr;
  }
  if (!v->is_array()) throw invalid(f, key, "expected an array");
  return v;
}

std::vector<std::string> read_strings(const gguf::GgufFile& f, const std::string& key) {
  const gguf::Value* v = find_array(f, key, key == "tokens");
  if (!v) return {};
  if (v->array_type != gguf::ValueType::kString) throw invalid(f, key, "expected strings");
  return v->as_array<std::string>();
}

// An id key: absent, negative or GGUF's 0xFFFFFFFF mean unset; other out-of-range values
// are a broken file, reported but not fatal (the token just is not special).
TokenId read_id(const gguf::GgufFile& f, const std::string& key, TokenId dflt, int32_t n_vocab) {
  const gguf::Value* v = f.find(kPrefix + key);
  if (!v) return dflt;
  const int64_t id = v->as_int();
  if (id < 0 || id == 0xFFFFFFFFll) return kNoToken;
  if (id >= n_vocab) {
    log_warn(f.path() + ": " + kPrefix + key + " = " + std::to_string(id) +
             " is outside the vocabulary (" + std::to_string(n_vocab) + " tokens); ignored");
    return kNoToken;
  }
  return static_cast<TokenId>(id);
}

void read_special_ids(const gguf::GgufFile& f, Vocab& v) {
  const int32_t n = v.size();
  // Defaults the converters rely on when a key is absent (SPM: <unk> <s> </s> = 0 1 2).
  const bool spm = v.kind == VocabKind::kSpm;
  auto dflt = [&](TokenId id) { return spm && id < n ? id : kNoToken; };
  SpecialIds& s = v.special;
  s.bos = read_id(f, "bos_token_id", dflt(1), n);
  s.eos = read_id(f, "eos_token_id", dflt(2), n);
  s.unk = read_id(f, "unknown_token_id", dflt(0), n);
  s.eot = read_id(f, "eot_token_id", kNoToken, n);
  s.eom = read_id(f, "eom_token_id", kNoToken, n);
  // GGUF spells it "seperator"; accept the correct spelling too.
  s.sep = read_id(f, "seperator_token_id", read_id(f, "separator_token_id", kNoToken, n), n);
  s.pad = read_id(f, "padding_token_id", kNoToken, n);
  s.cls = read_id(f, "cls_token_id", kNoToken, n);
  s.mask = read_id(f, "mask_token_id", kNoToken, n);
  if (v.kind == VocabKind::kWordPiece) {
    // BERT frames a sequence as [CLS] ... [SEP].
    if (s.bos == kNoToken) s.bos = s.cls;
    if (s.eos == kNoToken) s.eos = s.sep;
  }
}

void read_merges(const gguf::GgufFile& f, Vocab& v) {
  const std::vector<std::string> merges = read_strings(f, "merges");
  if (merges.empty())
    throw Error(ErrorCode::kNotFound, f.path() + ": missing " + kPrefix + "merges");
  size_t skipped = 0;
  v.merges.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    // "left right": the left part is never empty, so the separator is the first space
    // after position 0.
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos)
      throw invalid(f, "merges", "entry " + std::to_string(rank) + " has no space");
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    const TokenId l = v.find(left), r = v.find(right);
    const TokenId result = v.find(std::string(left) + std::string(right));
    if (l == kNoToken || r == kNoToken || result == kNoToken) {
      ++skipped;
      continue;
    }
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
    v.merges.emplace(key, Merge{static_cast<int32_t>(rank), result});  // first (lowest) rank wins
  }
  if (skipped > 0) {
    log_warn(f.path() + ": " + std::to_string(skipped) +
             " merges name tokens not in the vocabulary; ignored");
  }
}

void detect_wordpiece_spelling(Vocab& v) {
  size_t marked = 0, hashed = 0;
  for (const std::string& t : v.tokens) {
    marked += t.compare(0, 3, "\xE2\x96\x81") == 0;
    hashed += t.compare(0, 2, "##") == 0;
  }
  if (marked >= hashed) {
    v.wp_word_prefix = "\xE2\x96\x81";
  } else {
    v.wp_continuation_prefix = "##";
  }
}

VocabKind read_kind(const gguf::GgufFile& f) {
  const std::string model = f.get_string_or(kPrefix + "model", "");
  if (model == "llama") return VocabKind::kSpm;
  if (model == "gpt2") return VocabKind::kBpe;
  if (model == "bert") return VocabKind::kWordPiece;
  throw Error(ErrorCode::kUnsupported, f.path() + ": " + kPrefix + "model '" + model +
                                           "' is not supported (llama, gpt2 or bert)");
}

std::string length_mismatch(size_t got, size_t n) {
  return "length " + std::to_string(got) + " != " + std::to_string(n) + " tokens";
}

// tokens, scores, token_type and the text -> id map.
void read_token_tables(const gguf::GgufFile& f, Vocab& v) {
  v.tokens = read_strings(f, "tokens");
  const size_t n = v.tokens.size();
  if (n == 0) throw invalid(f, "tokens", "empty vocabulary");
  if (n > static_cast<size_t>(INT32_MAX)) throw invalid(f, "tokens", "too many tokens");

  v.scores.assign(n, 0.0f);
  if (const gguf::Value* s = find_array(f, "scores", false)) {
    const std::vector<double> d = s->as_float_array();
    if (d.size() != n) throw invalid(f, "scores", length_mismatch(d.size(), n));
    for (size_t i = 0; i < n; ++i) v.scores[i] = static_cast<float>(d[i]);
  }
  v.types.assign(n, TokenType::kNormal);
  if (const gguf::Value* t = find_array(f, "token_type", false)) {
    const std::vector<int64_t> d = t->as_int_array();
    if (d.size() != n) throw invalid(f, "token_type", length_mismatch(d.size(), n));
    for (size_t i = 0; i < n; ++i) {
      // Unknown type codes are treated as normal text rather than rejected.
      v.types[i] = d[i] >= 0 && d[i] <= 6 ? static_cast<TokenType>(d[i]) : TokenType::kNormal;
    }
  }
  v.text_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // The first of duplicate texts wins, so lookups are deterministic.
    v.text_to_id.emplace(std::string_view(v.tokens[i]), static_cast<TokenId>(i));
  }
}

// add_bos / add_eos / add_space_prefix, with each kind's defaults.
void read_flags(const gguf::GgufFile& f, Vocab& v) {
  const bool spm = v.kind == VocabKind::kSpm;
  const bool wpm = v.kind == VocabKind::kWordPiece;
  v.add_bos = f.get_bool_or(kPrefix + "add_bos_token", spm || wpm);
  v.add_eos = f.get_bool_or(kPrefix + "add_eos_token", wpm);
  // A default to add a token the vocabulary lacks would make every encode fail: drop it.
  if (v.add_bos && v.special.bos == kNoToken) {
    log_warn(f.path() + ": add_bos_token is set but there is no BOS token; not adding one");
    v.add_bos = false;
  }
  if (v.add_eos && v.special.eos == kNoToken) {
    log_warn(f.path() + ": add_eos_token is set but there is no EOS token; not adding one");
    v.add_eos = false;
  }
  v.add_space_prefix = spm && f.get_bool_or(kPrefix + "add_space_prefix", true);
  v.strip_first_space = v.add_space_prefix || wpm;
}

}  // namespace

std::unique_ptr<const Vocab> Vocab::load(const gguf::GgufFile& f) {
  auto v = std::make_unique<Vocab>();
  v->kind = read_kind(f);
  read_token_tables(f, *v);
  if (v->kind == VocabKind::kWordPiece) detect_wordpiece_spelling(*v);
  read_special_ids(f, *v);
  read_flags(f, *v);
  const std::string pre = f.get_string_or(kPrefix + "pre", "default");
  if (v->kind == VocabKind::kBpe) {
    read_merges(f, *v);
    v->pre.emplace(PreTokenizer::for_name(pre));
    v->pre_name = v->pre->name();
  } else {
    v->pre_name = pre;  // SPM and WordPiece do not split by regex
  }
  derive_tables(*v);
  return v;
}

}  // namespace keel::tokenizer
