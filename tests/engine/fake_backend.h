// FakeBackend — a deterministic stand-in for model + KV cache + tokenizer that lets the
// engine tests drive the scheduler through exact scenarios in microseconds.
//
// Its "model" makes each position's logits a hash of every token of the sequence up to
// that position, so an output is a pure function of the token history: any token fed
// twice, skipped, reordered, or fed at a wrong position changes what follows. forward()
// checks that positions continue each sequence's length (throws otherwise) and commits
// only at the end, like the real one. The prefix index remembers published token
// sequences; open() attaches the longest common prefix.
//
// Hooks: on_forward runs inside forward() before anything is committed (tests cancel,
// block or throw there); forced(history) can pin the next token (stop-string tests).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/backend.h"

namespace keel::engine::test {

class FakeBackend : public Backend {
 public:
  // Vocabulary: token 0 ends generation, 1 is BOS (no text), 2.. have `pieces`.
  explicit FakeBackend(std::vector<std::string> pieces = default_pieces());
  static std::vector<std::string> default_pieces();

  int32_t n_vocab() const override { return static_cast<int32_t>(pieces_.size()); }
  Opened open(std::span<const int32_t> prompt, int64_t max_reuse) override;
  int64_t length(SeqId seq) const override;
  void forward(std::span<const BatchEntry> batch, std::vector<float>* logits) override;
  void publish(SeqId seq, std::span<const int32_t> tokens) override;
  void release(SeqId seq) override;
  int64_t shift(SeqId seq, int64_t n_keep, int64_t n_discard) override;
  void check_invariants() const override;
  KvUsage kv_usage() const override;
  int64_t empty_attention_rows() const override { return 0; }
  std::unique_ptr<TokenDecoder> make_decoder(bool render_special) const override;
  std::string token_piece(int32_t token) const override;
  bool is_end_of_generation(int32_t token) const override { return token == 0; }

  // The logits row the fake model produces after `history` (its oracle).
  std::vector<float> logits_after(const std::vector<int32_t>& history) const;

  std::function<void(std::span<const BatchEntry>)> on_forward;
  std::function<int32_t(const std::vector<int32_t>&)> forced;  // -1 = not forced
  bool eog_allowed = true;  // false: token 0 never wins (runs go to max_tokens)
  size_t shift_loses = 0;   // shift() drops this many extra positions at the end
  bool decoder_finish_throws = false;  // the detokenizer's final flush fails

  // Observations for tests (engine thread writes, read after the engine is done).
  int64_t live_sequences() const { return static_cast<int64_t>(seqs_.size()); }
  int64_t forward_calls = 0, max_batch = 0, forward_tokens = 0;
  std::vector<size_t> batch_sizes;

 private:
  std::vector<std::string> pieces_;
  std::map<SeqId, std::vector<int32_t>> seqs_;  // committed tokens per sequence
  std::set<std::vector<int32_t>> published_;
  SeqId next_seq_ = 1;
};

}  // namespace keel::engine::test
