// HookedBackend — wraps any Backend and runs a hook (on the engine thread) before each
// forward pass, with the batch: tests cancel, observe batch composition or block there.
#pragma once

#include <functional>
#include <memory>

#include "engine/backend.h"

namespace keel::engine::test {

class HookedBackend : public Backend {
 public:
  using Hook = std::function<void(std::span<const BatchEntry>)>;
  HookedBackend(std::unique_ptr<Backend> inner, Hook hook) : inner_(std::move(inner)), hook_(std::move(hook)) {}

  int32_t n_vocab() const override { return inner_->n_vocab(); }
  Opened open(std::span<const int32_t> p, int64_t m) override { return inner_->open(p, m); }
  int64_t length(SeqId s) const override { return inner_->length(s); }
  void forward(std::span<const BatchEntry> b, std::vector<float>* l) override {
    hook_(b);
    inner_->forward(b, l);
  }
  void publish(SeqId s, std::span<const int32_t> t) override { inner_->publish(s, t); }
  void release(SeqId s) override { inner_->release(s); }
  int64_t shift(SeqId s, int64_t k, int64_t d) override { return inner_->shift(s, k, d); }
  void check_invariants() const override { inner_->check_invariants(); }
  KvUsage kv_usage() const override { return inner_->kv_usage(); }
  int64_t empty_attention_rows() const override { return inner_->empty_attention_rows(); }
  std::unique_ptr<TokenDecoder> make_decoder(bool render_special) const override {
    return inner_->make_decoder(render_special);
  }
  std::string token_piece(int32_t t) const override { return inner_->token_piece(t); }
  bool is_end_of_generation(int32_t t) const override { return inner_->is_end_of_generation(t); }

 private:
  std::unique_ptr<Backend> inner_;
  Hook hook_;
};

}  // namespace keel::engine::test
