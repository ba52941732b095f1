// InferenceService — everything the HTTP layer needs from a loaded model, and nothing
// more: prompt preparation (chat template + tokenizer), submitting a generation, token
// lookups, and numbers for /metrics and /slots. The production implementation
// (engine_service.h) wraps engine::Engine, the tokenizer and the chat template; tests use
// a scripted fake, so every route can be exercised without a model.
//
// Contract:
//  - All methods are called concurrently from HTTP threads: implementations are
//    thread-safe. None of them touches the model's state (the engine thread owns it).
//  - Errors are keel::Error: kInvalidArgument for a bad request (→ 400), kBusy when the
//    engine cannot take more (→ 429); anything else is a 500.
//  - submit() never blocks on the engine's work; the returned source delivers exactly one
//    Finish event. Dropping the source cancels the request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "server/event_pump.h"
#include "server/openai_request.h"
#include "tokenizer/fill_in_middle.h"

namespace keel::server {

struct ModelInfo {
  std::string id;          // name served in /v1/models and echoed as "model"
  int32_t n_vocab = 0;
  int32_t n_ctx = 0;       // per-request context (prompt + completion)
  int32_t n_parallel = 1;  // slots
  std::string chat_template;  // the renderer in use (for /slots and /v1/models)
  chat::ToolSyntax tool_syntax = chat::ToolSyntax::kHermes;  // how its replies call functions (chat/tools.h)
  // Chat replies are harmony (gpt-oss): read with their control tokens rendered and split
  // into reasoning_content and content (server/harmony_reader.h).
  bool harmony_output = false;
  int64_t created = 0;        // unix seconds the model was loaded (/v1/models "created")
};

struct SlotInfo {
  int32_t id = 0;
  std::string state;  // "idle" | "busy" (finer states when the engine reports them)
  int64_t n_past = 0;
  uint64_t request_id = 0;
};

class InferenceService {
 public:
  virtual ~InferenceService() = default;

  virtual ModelInfo model_info() const = 0;

  // The prompt tokens for a parsed request (chat: template rendered with the generation
  // prompt — and the tools, unless tool_choice is none — then request.assistant_prefix,
  // tokenized with special tokens; completion: text tokenized with BOS, or the tokens as
  // given).
  // `prompt`: which of a completion request's prompts (ignored for chat).
  virtual std::vector<int32_t> prompt_tokens(const CompletionRequest& request, size_t prompt = 0) const = 0;
  // A chat request's prompt as text: the template rendered as prompt_tokens() renders it
  // (generation prompt, tools, assistant_prefix), before tokenization.
  virtual std::string chat_prompt(const CompletionRequest& request) const = 0;
  // llama-server's /infill prompt (tokenizer/fill_in_middle.h); ApiError 400 "unsupported"
  // when the vocabulary has no fill-in-the-middle tokens.
  virtual std::vector<int32_t> infill_tokens(const tokenizer::FimRequest& request) const = 0;
  virtual std::vector<int32_t> tokenize(std::string_view text, bool add_special,
                                        bool parse_special) const = 0;
  virtual std::string detokenize(const std::vector<int32_t>& tokens) const = 0;
  virtual std::string token_piece(int32_t token) const = 0;  // raw bytes

  virtual std::unique_ptr<EventSource> submit(engine::Request request) = 0;

  virtual engine::EngineStats stats() const = 0;
  virtual std::vector<SlotInfo> slots() const = 0;
};

}  // namespace keel::server
