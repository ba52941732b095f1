#include <algorithm>
#include <queue>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/encoders.h"
#include "tokenizer/symbol_list.h"

namespace keel::tokenizer {

namespace {

struct Bigram {
  int32_t rank;
  int left;
  int right;
  TokenId left_id;  // the pair as queued; a mismatch later means it is stale
  TokenId right_id;
  TokenId result;
};

// Lowest rank first; among equal ranks the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class BpeWord {
 public:
  BpeWord(const Vocab& vocab, std::string_view word) : vocab_(vocab), word_(word) {}

  void run(std::vector<TokenId>& out) {
    if (vocab_.pre->ignore_merges()) {
      const TokenId whole = vocab_.find(word_);
      if (whole != kNoToken) {
        out.push_back(whole);
        return;
      }
    }
    symbols_ = split_characters(word_);
    // ids_[i]: the token symbol i spells; kNoToken for a character outside the vocabulary
    // (it never merges) and for merged-away symbols.
    ids_.resize(symbols_.size());
    for (size_t i = 0; i < symbols_.size(); ++i) {
      ids_[i] = vocab_.find(word_.substr(symbols_[i].begin, symbols_[i].len));
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_queue(i - 1, i);
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      if (ids_[b.left] != b.left_id || ids_[b.right] != b.right_id ||
          symbols_[b.left].next != b.right || symbols_[b.right].len == 0) {
        continue;
      }
      ids_[b.left] = b.result;
      ids_[b.right] = kNoToken;
      merge_with_next(symbols_, b.left);
      try_queue(symbols_[b.left].prev, b.left);
      try_queue(b.left, symbols_[b.left].next);
    }
    // A character outside the vocabulary (a byte no token spells) is dropped, as the
    // reference tokenizers do: byte-level vocabularies name their end-of-text token as
    // "unknown", and inserting it would end the text for the model.
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
      if (ids_[i] != kNoToken) out.push_back(ids_[i]);
    }
  }

 private:
  void try_queue(int left, int right) {
    if (left < 0 || right < 0) return;
    const TokenId l = ids_[left], r = ids_[right];
    if (l == kNoToken || r == kNoToken) return;
    const auto m = vocab_.find_merge(l, r);
    if (!m) return;
    queue_.push({m->rank, left, right, l, r, m->result});
  }

  const Vocab& vocab_;
  std::string_view word_;
  std::vector<TextSymbol> symbols_;
  std::vector<TokenId> ids_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  for (std::string_view piece : vocab.pre->split(text)) {
    const std::string word = bytes_to_unicode_text(piece);
    BpeWord(vocab, word).run(out);
  }
}

}  // namespace keel::tokenizer
