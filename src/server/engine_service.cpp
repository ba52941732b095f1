#include "server/engine_service.h"

#include "core/error.h"
#include "server/api_error.h"
#include "tokenizer/fill_in_middle.h"

#include <chrono>

#include "server/openai_response.h"

namespace keel::server {
namespace {

// The HTTP side of one engine request.
class HandleSource : public EventSource {
 public:
  explicit HandleSource(engine::RequestHandle handle) : handle_(std::move(handle)) {}
  std::optional<engine::Event> next(std::chrono::milliseconds timeout) override { return handle_.next(timeout); }
  void cancel() override { handle_.cancel(); }

 private:
  engine::RequestHandle handle_;  // its destructor cancels an unfinished request
};

std::string special_text(const tokenizer::Tokenizer& tok, tokenizer::TokenId id) {
  return id == tokenizer::kNoToken ? std::string() : tok.token_text(id);
}

}  // namespace

EngineService::EngineService(EngineServiceParts parts)
    : parts_(std::move(parts)),
      created_(unix_now()) {}

EngineService::~EngineService() = default;

ModelInfo EngineService::model_info() const {
  ModelInfo info;
  info.id = parts_.model_id;
  info.n_vocab = parts_.tokenizer->vocab_size();
  info.n_ctx = parts_.engine->options().n_ctx;
  info.n_parallel = parts_.engine->options().n_parallel;
  info.chat_template = chat::family_name(parts_.chat_family);
  info.tool_syntax = chat::tool_syntax(parts_.chat_family);
  // Harmony's markers must be tokens of the vocabulary: with --chat-template harmony forced
  // on another model, the reply holds no markers and rendering its control tokens would
  // only put "<s>"-like text in the content.
  info.harmony_output = parts_.chat_family == chat::ChatFamily::kHarmony &&
                        parts_.tokenizer->find_token("<|channel|>") != tokenizer::kNoToken &&
                        parts_.tokenizer->find_token("<|message|>") != tokenizer::kNoToken;
  info.created = created_;
  return info;
}

chat::RenderOptions EngineService::render_options(const CompletionRequest& request) const {
  const tokenizer::Tokenizer& tok = *parts_.tokenizer;
  chat::RenderOptions options;
  // tool_choice "none": the model is not shown the functions (history still renders).
  if (request.tool_choice != ToolChoice::kNone) options.tools = request.tools;
  if (!request.reasoning_effort.empty()) options.harmony.reasoning_effort = request.reasoning_effort;
  options.add_generation_prompt = true;
  if (tok.add_bos_default()) options.bos_token = special_text(tok, tok.special_ids().bos);
  options.eos_token = special_text(tok, tok.special_ids().eos);
  return options;
}

std::string EngineService::chat_prompt(const CompletionRequest& request) const {
  std::vector<chat::Message> messages;
  messages.reserve(request.messages.size());
  for (const ChatMessage& m : request.messages) {
    chat::Message msg(chat::parse_role(m.role), m.content, m.name);
    msg.tool_calls = m.tool_calls;
    msg.tool_call_id = m.tool_call_id;
    messages.push_back(std::move(msg));
  }
  return chat::render_chat(parts_.chat_family, messages, render_options(request)) + request.assistant_prefix;
}

namespace {

// The FIM prompt, or a 400 naming `param` when the vocabulary has no FIM tokens.
std::vector<int32_t> fim_tokens(const tokenizer::Tokenizer& tok, const tokenizer::FimRequest& r, const char* param) {
  auto fim = tokenizer::fill_in_middle(tok, r);
  if (!fim) {
    throw bad_request(param, std::string("'") + param + "' needs a fill-in-the-middle model: this vocabulary has no FIM "
                             "tokens (<|fim_prefix|>, <fim_prefix>, <｜fim▁begin｜> or <PRE> and their pairs)", "unsupported");
  }
  return *fim;
}

}  // namespace

std::vector<int32_t> EngineService::infill_tokens(const tokenizer::FimRequest& request) const {
  return fim_tokens(*parts_.tokenizer, request, "input_prefix");
}

std::vector<int32_t> EngineService::prompt_tokens(const CompletionRequest& request, size_t prompt) const {
  const tokenizer::Tokenizer& tok = *parts_.tokenizer;
  if (request.endpoint == Endpoint::kCompletion) {
    if (prompt >= request.prompts.size()) {
      throw keel::Error(keel::ErrorCode::kInvalidArgument, "prompt " + std::to_string(prompt) + " of a request with " +
                                                   std::to_string(request.prompts.size()));
    }
    const PromptInput& p = request.prompts[prompt];
    if (request.suffix) {
      if (!p.text) throw bad_request("suffix", "'suffix' needs text prompts (the middle is filled between texts)");
      tokenizer::FimRequest fim;
      fim.prefix = *p.text;
      fim.suffix = *request.suffix;
      return fim_tokens(tok, fim, "suffix");
    }
    if (!p.text) return p.tokens;
    return tok.encode(*p.text, {});
  }
  const chat::RenderOptions options = render_options(request);
  const std::string text = chat_prompt(request);
  tokenizer::EncodeOptions encode;
  // Families whose format starts with BOS wrote it; the others (ChatML) get the
  // vocabulary's default, so BOS is never doubled nor lost.
  encode.add_bos = tok.add_bos_default() && (options.bos_token.empty() || !text.starts_with(options.bos_token));
  encode.parse_special = true;
  return tok.encode(text, encode);
}

std::vector<int32_t> EngineService::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  tokenizer::EncodeOptions options;
  options.add_bos = add_special && parts_.tokenizer->add_bos_default();
  options.add_eos = add_special && parts_.tokenizer->add_eos_default();
  options.parse_special = parse_special;
  return parts_.tokenizer->encode(text, options);
}

std::string EngineService::detokenize(const std::vector<int32_t>& tokens) const {
  tokenizer::DecodeOptions options;
  options.strip_space_prefix = true;
  return parts_.tokenizer->decode(tokens, options);
}

std::string EngineService::token_piece(int32_t token) const {
  if (token < 0 || token >= parts_.tokenizer->vocab_size()) return {};
  return parts_.tokenizer->token_to_piece(token, /*render_special=*/true);
}

std::unique_ptr<EventSource> EngineService::submit(engine::Request request) {
  return std::make_unique<HandleSource>(parts_.engine->submit(std::move(request)));
}

engine::EngineStats EngineService::stats() const { return parts_.engine->stats(); }

std::vector<SlotInfo> EngineService::slots() const {
  // The engine reports how many slots are busy, not which: slots are listed by state.
  const engine::EngineStats s = parts_.engine->stats();
  std::vector<SlotInfo> out;
  for (int32_t i = 0; i < parts_.engine->options().n_parallel; ++i) {
    SlotInfo slot;
    slot.id = i;
    slot.state = i < s.slots_busy ? "busy" : "idle";
    out.push_back(slot);
  }
  return out;
}

void EngineService::shutdown(std::chrono::milliseconds grace) { parts_.engine->shutdown(grace); }

}  // namespace keel::server
