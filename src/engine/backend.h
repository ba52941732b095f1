// Backend — what the engine thread needs from a model: a forward pass over a batch of
// sequences in a paged KV cache with a prefix index, plus detokenization. The real one
// (engine/model_backend.h) wraps model::Model, kv::KvCache and tokenizer::Tokenizer;
// tests can supply their own to drive the scheduler through exact scenarios.
//
// Contract:
//  - Owned and called by the engine thread only; implementations need no locking.
//  - One source of truth for positions: length(seq) is the KV cache's; the engine never
//    keeps its own copy of a sequence's length.
//  - forward(): the entries of one sequence are consecutive positions starting at
//    length(seq). On success every sequence in the batch has its new positions committed
//    and `logits` holds one row [n_vocab] per entry with want_logits, in entry order. On
//    a throw no position of any sequence in the batch was committed (rolled back), so the
//    cache is as it was before the call.
//  - Errors are keel::Error; nothing here may abort on input a request can reach.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace keel::engine {

using SeqId = int32_t;

struct BatchEntry {
  int32_t token = 0;
  int64_t pos = 0;
  SeqId seq = 0;
  bool want_logits = false;
};

// Incremental detokenizer of one response: push() returns text that became complete
// valid UTF-8; finish() flushes what never completed (as U+FFFD).
class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  virtual std::string push(int32_t token) = 0;
  virtual std::string finish() = 0;
};

struct KvUsage {
  int64_t pages_used = 0;    // referenced by live sequences
  int64_t pages_cached = 0;  // held only by the prefix index (evictable)
  int64_t pages_total = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual int32_t n_vocab() const = 0;

  struct Opened {
    SeqId seq = 0;
    int64_t reused = 0;  // leading prompt tokens attached from the prefix index
  };
  // A new sequence for `prompt`, attached to the longest cached prefix of at most
  // `max_reuse` tokens (the engine passes prompt.size() - 1: the last prompt token is
  // always computed, for its logits).
  virtual Opened open(std::span<const int32_t> prompt, int64_t max_reuse) = 0;
  virtual int64_t length(SeqId seq) const = 0;
  virtual void forward(std::span<const BatchEntry> batch, std::vector<float>* logits) = 0;
  // Registers the sequence's committed positions, whose tokens are `tokens`
  // (tokens.size() == length(seq)), in the prefix index so later requests reuse them.
  virtual void publish(SeqId seq, std::span<const int32_t> tokens) = 0;
  virtual void release(SeqId seq) = 0;
  // Context shift: drops [n_keep, n_keep + n_discard) and renumbers the rest. Returns
  // the resulting length: len - n_discard, or less when the cache could not keep some
  // positions (the engine recomputes them from its tokens).
  virtual int64_t shift(SeqId seq, int64_t n_keep, int64_t n_discard) = 0;
  // Throws keel::Error(kInternal) naming the first violated cache invariant.
  virtual void check_invariants() const = 0;
  virtual KvUsage kv_usage() const = 0;
  // Attention rows that had no visible key (should stay 0; exported as a metric).
  virtual int64_t empty_attention_rows() const = 0;

  // render_special: control tokens decode to their text instead of nothing.
  virtual std::unique_ptr<TokenDecoder> make_decoder(bool render_special) const = 0;
  virtual std::string token_piece(int32_t token) const = 0;  // raw bytes, for logprobs
  virtual bool is_end_of_generation(int32_t token) const = 0;
};

}  // namespace keel::engine
