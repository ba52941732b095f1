#include "fake_backend.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "core/fault.h"

namespace keel::engine::test {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

class FakeDecoder : public TokenDecoder {
 public:
  explicit FakeDecoder(const FakeBackend* b) : backend_(b) {}
  std::string push(int32_t token) override { return backend_->token_piece(token); }
  std::string finish() override {
    if (backend_->decoder_finish_throws) throw Error(ErrorCode::kInternal, "fake decoder: flush failed");
    return {};
  }

 private:
  const FakeBackend* backend_;
};

}  // namespace

std::vector<std::string> FakeBackend::default_pieces() {
  std::vector<std::string> p = {"", ""};
  for (char c = 'a'; c <= 'z'; ++c) p.push_back(std::string(1, c));
  for (const char* w : {" the", " cat", " sat", " on", " mat", ".", ",", " and", "!", " a"}) p.push_back(w);
  return p;
}

FakeBackend::FakeBackend(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
  if (pieces_.size() < 3) throw Error(ErrorCode::kInvalidArgument, "fake backend: vocabulary too small");
}

Backend::Opened FakeBackend::open(std::span<const int32_t> prompt, int64_t max_reuse) {
  int64_t best = 0;
  for (const auto& cached : published_) {
    int64_t n = 0;
    while (n < static_cast<int64_t>(std::min(cached.size(), prompt.size())) && cached[n] == prompt[n]) ++n;
    best = std::max(best, n);
  }
  best = std::min(best, max_reuse);
  SeqId id = next_seq_++;
  seqs_[id] = std::vector<int32_t>(prompt.begin(), prompt.begin() + best);
  return {id, best};
}

int64_t FakeBackend::length(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) throw Error(ErrorCode::kInvalidArgument, "fake backend: no sequence " + std::to_string(seq));
  return static_cast<int64_t>(it->second.size());
}

std::vector<float> FakeBackend::logits_after(const std::vector<int32_t>& history) const {
  uint64_t h = 0x1234;
  for (int32_t t : history) h = mix(h, static_cast<uint64_t>(t));
  std::vector<float> row(pieces_.size());
  for (size_t t = 0; t < row.size(); ++t) row[t] = static_cast<float>(mix(h, t) % 1000) / 100.0f;
  if (!eog_allowed) row[0] = -1e9f;
  int32_t f = forced ? forced(history) : -1;
  if (f >= 0 && f < n_vocab()) row[f] += 100.0f;
  return row;
}

void FakeBackend::forward(std::span<const BatchEntry> batch, std::vector<float>* logits) {
  ++forward_calls;
  forward_tokens += static_cast<int64_t>(batch.size());
  max_batch = std::max<int64_t>(max_batch, static_cast<int64_t>(batch.size()));
  batch_sizes.push_back(batch.size());
  // Work on copies; commit only when everything succeeded.
  std::map<SeqId, std::vector<int32_t>> next;
  logits->clear();
  for (const BatchEntry& e : batch) {
    if (!next.count(e.seq)) {
      auto it = seqs_.find(e.seq);
      if (it == seqs_.end()) throw Error(ErrorCode::kInvalidArgument, "fake forward: unknown sequence " + std::to_string(e.seq));
      next[e.seq] = it->second;
    }
    std::vector<int32_t>& toks = next[e.seq];
    if (e.pos != static_cast<int64_t>(toks.size())) {
      throw Error(ErrorCode::kInternal, "fake forward: sequence " + std::to_string(e.seq) + " position " +
                                            std::to_string(e.pos) + " does not continue length " +
                                            std::to_string(toks.size()));
    }
    if (e.token < 0 || e.token >= n_vocab()) throw Error(ErrorCode::kInvalidArgument, "fake forward: bad token");
    toks.push_back(e.token);
    if (e.want_logits) {
      std::vector<float> row = logits_after(toks);
      logits->insert(logits->end(), row.begin(), row.end());
    }
  }
  fault_point("fake.forward");  // an injected fault in the middle of the pass
  if (on_forward) on_forward(batch);
  for (auto& [seq, toks] : next) seqs_[seq] = std::move(toks);
}

void FakeBackend::publish(SeqId seq, std::span<const int32_t> tokens) {
  const std::vector<int32_t>& toks = seqs_.at(seq);
  if (!std::equal(tokens.begin(), tokens.end(), toks.begin(), toks.end())) {
    throw Error(ErrorCode::kInternal, "fake publish: tokens differ from the sequence's");
  }
  published_.insert(toks);
}

void FakeBackend::release(SeqId seq) {
  if (!seqs_.erase(seq)) throw Error(ErrorCode::kInvalidArgument, "fake release: unknown sequence");
}

int64_t FakeBackend::shift(SeqId seq, int64_t n_keep, int64_t n_discard) {
  std::vector<int32_t>& toks = seqs_.at(seq);
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > static_cast<int64_t>(toks.size())) {
    throw Error(ErrorCode::kInvalidArgument, "fake shift: bad range");
  }
  toks.erase(toks.begin() + n_keep, toks.begin() + n_keep + n_discard);
  // Like a sliding window that lost positions: optionally keep less than asked.
  if (shift_loses > 0) toks.resize(toks.size() - std::min<size_t>(toks.size() - 1, shift_loses));
  return static_cast<int64_t>(toks.size());
}

void FakeBackend::check_invariants() const {}

KvUsage FakeBackend::kv_usage() const {
  KvUsage u;
  for (const auto& [id, toks] : seqs_) u.pages_used += static_cast<int64_t>(toks.size() + 15) / 16;
  for (const auto& toks : published_) u.pages_cached += static_cast<int64_t>(toks.size() + 15) / 16;
  u.pages_total = 1 << 20;
  return u;
}

std::unique_ptr<TokenDecoder> FakeBackend::make_decoder(bool) const { return std::make_unique<FakeDecoder>(this); }

std::string FakeBackend::token_piece(int32_t token) const {
  if (token < 0 || token >= n_vocab()) return {};
  return pieces_[static_cast<size_t>(token)];
}

}  // namespace keel::engine::test
