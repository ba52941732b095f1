#include <algorithm>
#include <queue>

#include "core/utf8.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/encoders.h"

namespace keel::tokenizer {

namespace {

// A token in a doubly linked list over the word; merged-away symbols have id kNoToken
// and len 0. A character outside the vocabulary keeps id kNoToken and never merges.
struct Symbol {
  TokenId id;
  size_t begin;
  size_t len;
  int prev;
  int next;
};

struct Bigram {
  int32_t rank;
  int left;
  int right;
  TokenId left_id;   // the pair as queued; a mismatch later means it is stale
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
    split_characters();
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_queue(i - 1, i);
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = symbols_[b.left];
      Symbol& r = symbols_[b.right];
      if (l.id != b.left_id || r.id != b.right_id || l.next != b.right || r.len == 0) continue;
      l.id = b.result;
      l.len += r.len;
      r.len = 0;
      r.id = kNoToken;
      l.next = r.next;
      if (r.next >= 0) symbols_[r.next].prev = b.left;
      try_queue(l.prev, b.left);
      try_queue(b.left, l.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
      const Symbol& s = symbols_[i];
      if (s.id != kNoToken) {
        out.push_back(s.id);
      } else if (vocab_.special.unk != kNoToken) {
        out.push_back(vocab_.special.unk);
      }
    }
  }

 private:
  void split_characters() {
    size_t pos = 0;
    while (pos < word_.size()) {
      const size_t n = std::min(utf8_char_length(word_[pos]), word_.size() - pos);
      const int idx = static_cast<int>(symbols_.size());
      symbols_.push_back({vocab_.find(word_.substr(pos, n)), pos, n, idx - 1,
                          pos + n == word_.size() ? -1 : idx + 1});
      pos += n;
    }
  }

  void try_queue(int left, int right) {
    if (left < 0 || right < 0) return;
    const TokenId l = symbols_[left].id, r = symbols_[right].id;
    if (l == kNoToken || r == kNoToken) return;
    const auto m = vocab_.find_merge(l, r);
    if (!m) return;
    queue_.push({m->rank, left, right, l, r, m->result});
  }

  const Vocab& vocab_;
  std::string_view word_;
  std::vector<Symbol> symbols_;
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
