#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/encoders.h"
#include "tokenizer/special_split.h"
#include "tokenizer/vocab.h"

namespace keel::tokenizer {

namespace {

void append_bos_eos(std::vector<TokenId>& out, TokenId id, const char* what) {
  if (id == kNoToken) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("tokenizer: asked to add ") + what + " but the vocabulary has none");
  }
  out.push_back(id);
}

// SPM: spaces become "▁", with a leading one when the vocabulary prefixes text.
std::string escape_spm(std::string_view text, bool prefix) {
  std::string s;
  s.reserve(text.size() * 3 + 3);
  if (prefix) s += "\xE2\x96\x81";
  for (char c : text) {
    if (c == ' ') {
      s += "\xE2\x96\x81";
    } else {
      s.push_back(c);
    }
  }
  return s;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) { return Tokenizer(Vocab::load(file)); }

VocabKind Tokenizer::kind() const { return vocab_->kind; }
const std::string& Tokenizer::pre_tokenizer() const { return vocab_->pre_name; }
int32_t Tokenizer::vocab_size() const { return vocab_->size(); }
const SpecialIds& Tokenizer::special_ids() const { return vocab_->special; }
bool Tokenizer::add_bos_default() const { return vocab_->add_bos; }
bool Tokenizer::add_eos_default() const { return vocab_->add_eos; }
bool Tokenizer::add_space_prefix() const { return vocab_->add_space_prefix; }

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  const Vocab& v = *vocab_;
  if (!is_valid_utf8(text)) {
    throw Error(ErrorCode::kInvalidArgument, "tokenizer: input text is not valid UTF-8");
  }
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (options.add_bos.value_or(v.add_bos)) append_bos_eos(out, v.special.bos, "BOS");

  // SPM prefixes a space to the text at the start and after each special token, as the
  // reference tokenizers do.
  bool after_special = true;
  for (const Fragment& f : split_specials(v, text, options.parse_special)) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    switch (v.kind) {
      case VocabKind::kSpm:
        spm_encode(v, escape_spm(f.text, v.add_space_prefix && after_special), out);
        break;
      case VocabKind::kBpe:
        bpe_encode(v, f.text, out);
        break;
      case VocabKind::kWordPiece:
        wordpiece_encode(v, f.text, out);
        break;
    }
    after_special = false;
  }

  if (options.add_eos.value_or(v.add_eos)) append_bos_eos(out, v.special.eos, "EOS");
  return out;
}

const std::string& Tokenizer::token_text(TokenId id) const {
  vocab_->check_id(id);
  return vocab_->tokens[id];
}

TokenType Tokenizer::token_type(TokenId id) const {
  vocab_->check_id(id);
  return vocab_->types[id];
}

TokenId Tokenizer::find_token(std::string_view text) const { return vocab_->find(text); }

bool Tokenizer::is_end_of_generation(TokenId id) const {
  return vocab_->valid_id(id) && vocab_->end_of_generation[id];
}

const std::vector<TokenId>& Tokenizer::end_of_generation_ids() const { return vocab_->eog_ids; }

}  // namespace keel::tokenizer
