// EngineService — the production InferenceService: engine::Engine for generation, the
// model's Tokenizer for prompts and token text, and a chat family for /v1/chat.
//
// Contract:
//  - Owns the Engine (shut down with the service) and shares the Tokenizer (immutable,
//    thread-safe). Every method is thread-safe: Engine::submit/stats are, and the rest
//    only reads immutable state.
//  - Chat prompts: the family's template renders the conversation with the generation
//    prompt, BOS/EOS written as the vocabulary's own token text, then the text is encoded
//    with special tokens parsed; BOS is added only when the vocabulary wants one and the
//    template did not write it (never doubled). Completion prompts: the text is encoded
//    with the vocabulary's BOS default and no special-token parsing (user text cannot
//    smuggle control tokens in); token prompts go through as given.
#pragma once

#include <memory>
#include <string>

#include "chat/template.h"
#include "server/service.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

struct EngineServiceParts {
  std::unique_ptr<engine::Engine> engine;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
  chat::ChatFamily chat_family = chat::kFallbackFamily;
  std::string model_id;
};

class EngineService : public InferenceService {
 public:
  explicit EngineService(EngineServiceParts parts);
  ~EngineService() override;

  ModelInfo model_info() const override;
  std::vector<int32_t> prompt_tokens(const CompletionRequest& request, size_t prompt = 0) const override;
  std::string chat_prompt(const CompletionRequest& request) const override;
  std::vector<int32_t> infill_tokens(const tokenizer::FimRequest& request) const override;
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const override;
  std::string detokenize(const std::vector<int32_t>& tokens) const override;
  std::string token_piece(int32_t token) const override;
  std::unique_ptr<EventSource> submit(engine::Request request) override;
  engine::EngineStats stats() const override;
  std::vector<SlotInfo> slots() const override;

  // Graceful end for the engine: in-flight requests get up to `grace` to finish.
  void shutdown(std::chrono::milliseconds grace);

 private:
  chat::RenderOptions render_options(const CompletionRequest& request) const;

  EngineServiceParts parts_;
  int64_t created_;  // unix seconds at construction (the model is loaded by then)
};

}  // namespace keel::server
