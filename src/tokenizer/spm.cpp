#include <algorithm>
#include <queue>

#include "tokenizer/encoders.h"
#include "tokenizer/symbol_list.h"

namespace keel::tokenizer {

namespace {

struct Bigram {
  float score;
  int left;
  int right;
  size_t len;  // left.len + right.len when queued; a mismatch later means it is stale
};

// Highest score first; among equal scores the leftmost pair.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void run(std::vector<TokenId>& out) {
    symbols_ = split_characters(text_);
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_queue(i - 1, i);
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      const TextSymbol& l = symbols_[b.left];
      const TextSymbol& r = symbols_[b.right];
      if (l.len == 0 || r.len == 0 || l.len + r.len != b.len || l.next != b.right) continue;
      merge_with_next(symbols_, b.left);
      try_queue(l.prev, b.left);
      try_queue(b.left, l.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  TokenId lookup(size_t begin, size_t len) const {
    const TokenId id = vocab_.find(text_.substr(begin, len));
    return id != kNoToken && is_ordinary(vocab_.types[id]) ? id : kNoToken;
  }

  void try_queue(int left, int right) {
    if (left < 0 || right < 0) return;
    const TextSymbol& l = symbols_[left];
    const size_t len = l.len + symbols_[right].len;
    const TokenId id = lookup(l.begin, len);
    if (id == kNoToken) return;
    queue_.push({vocab_.scores[id], left, right, len});
  }

  void emit(const TextSymbol& s, std::vector<TokenId>& out) const {
    const TokenId id = lookup(s.begin, s.len);
    if (id != kNoToken) {
      out.push_back(id);
      return;
    }
    // Only single characters can be missing (merges always form tokens): spell the
    // character's bytes, or give one unknown token when a byte has no token either.
    bool all_bytes = true;
    for (size_t i = 0; i < s.len; ++i) {
      all_bytes =
          all_bytes && vocab_.byte_tokens[static_cast<uint8_t>(text_[s.begin + i])] != kNoToken;
    }
    if (!all_bytes) {
      if (vocab_.special.unk != kNoToken) out.push_back(vocab_.special.unk);
      return;
    }
    for (size_t i = 0; i < s.len; ++i) {
      out.push_back(vocab_.byte_tokens[static_cast<uint8_t>(text_[s.begin + i])]);
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<TextSymbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  SpmSession(vocab, text).run(out);
}

}  // namespace keel::tokenizer
