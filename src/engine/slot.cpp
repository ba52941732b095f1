#include "engine/slot.h"

#include <utility>

namespace keel::engine {

std::optional<FinishReason> Slot::accept_token(const sampling::SampleResult& sampled,
                                               const Backend& backend) {
  int32_t token = sampled.token;
  tokens.push_back(token);
  sampler->accept(token);
  if (json) json->accept(token);
  ++n_generated;
  t_last_token = std::chrono::steady_clock::now();
  if (n_generated == 1) t_first_token = t_last_token;
  if (!request.ignore_eos && backend.is_end_of_generation(token)) return FinishReason::kStop;

  pending.tokens.push_back(token);
  if (request.sampling.reports_logprobs()) {
    TokenLogprob lp;
    lp.token = token;
    lp.text = backend.token_piece(token);
    lp.logprob = sampled.logprob;
    for (const sampling::TokenLogprob& alt : sampled.top) lp.top.emplace_back(alt.token, alt.logprob);
    pending.logprobs.push_back(std::move(lp));
  }
  take_text(decoder->push(token));
  if (stop->stopped()) return FinishReason::kStop;
  if (request.max_tokens >= 0 && n_generated >= request.max_tokens) return FinishReason::kLength;
  if (!pending.text.empty()) send_pending();
  return std::nullopt;
}

void Slot::take_text(const std::string& text) {
  if (text.empty() || stop->stopped()) return;
  pending.text += stop->push(text).emit;
}

void Slot::send_pending() {
  if (pending.text.empty() && pending.tokens.empty() && pending.prompt_logprobs.empty()) return;
  channel->push(std::exchange(pending, Event{}));
}

void Slot::finish(FinishReason reason, const std::string& error) {
  if (reason == FinishReason::kStop || reason == FinishReason::kLength ||
      reason == FinishReason::kDeadline) {
    take_text(decoder->finish());
    if (!stop->stopped()) pending.text += stop->flush();
    send_pending();
  }
  Event done;
  done.reason = reason;
  done.error = error;
  if (reason == FinishReason::kStop) done.stop_word = stop->matched();
  done.usage.prompt_tokens = n_prompt;
  done.usage.completion_tokens = n_generated;
  done.usage.cached_tokens = n_cached;
  if (n_generated > 0) {
    using Ms = std::chrono::duration<double, std::milli>;
    done.usage.prompt_ms = Ms(t_first_token - t_admitted).count();
    done.usage.generation_ms = Ms(t_last_token - t_first_token).count();
  }
  channel->finish(std::move(done));
}

}  // namespace keel::engine
