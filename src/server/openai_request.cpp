#include "server/openai_request.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "sampling/json_schema.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/tool_request.h"

namespace keel::server {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

ApiError unsupported(const std::string& param, const std::string& message) {
  return bad_request(param, message, "unsupported");
}

int32_t token_id(const json& value, const std::string& param, const RequestLimits& limits) {
  const auto id = as_integer(value);
  if (!value.is_number() || !id) {
    throw bad_request(param, "'" + param + "' must be a token id (integer), got " +
                                 describe(value), "invalid_type");
  }
  if (*id < 0 || *id >= limits.n_vocab) {
    throw bad_request(param, "'" + param + "' token id " + std::to_string(*id) +
                                 " is outside the vocabulary [0, " +
                                 std::to_string(limits.n_vocab) + ")");
  }
  return static_cast<int32_t>(*id);
}

std::vector<std::string> parse_stop(const JsonFields& f, const RequestLimits& limits) {
  const json* v = f.get("stop");
  if (!v) return {};
  std::vector<std::string> stop;
  if (v->is_string()) {
    stop.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > static_cast<size_t>(limits.max_stop)) {
      throw bad_request("stop", "'stop' has " + std::to_string(v->size()) +
                                    " strings; at most " + std::to_string(limits.max_stop) +
                                    " are allowed");
    }
    for (const json& s : *v) {
      if (!s.is_string()) {
        throw bad_request("stop", "'stop' must be a string or an array of strings, found " +
                                      describe(s), "invalid_type");
      }
      stop.push_back(s.get<std::string>());
    }
  } else {
    throw bad_request("stop", "'stop' must be a string or an array of strings, got " +
                                  describe(*v), "invalid_type");
  }
  for (const auto& s : stop) {
    if (s.empty()) throw bad_request("stop", "'stop' strings must not be empty");
  }
  return stop;
}

std::vector<std::pair<int32_t, float>> parse_logit_bias(const JsonFields& f,
                                                        const RequestLimits& limits) {
  const json* v = f.object("logit_bias");
  if (!v) return {};
  std::vector<std::pair<int32_t, float>> bias;
  for (const auto& [key, value] : v->items()) {
    const std::string param = "logit_bias";
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != key.size()) {
      throw bad_request(param, "'logit_bias' keys must be token ids, got \"" +
                                   sanitize_utf8(key.substr(0, 40)) + "\"", "invalid_type");
    }
    if (id < 0 || id >= limits.n_vocab) {
      throw bad_request(param, "'logit_bias' token id " + std::to_string(id) +
                                   " is outside the vocabulary [0, " +
                                   std::to_string(limits.n_vocab) + ")");
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        value.get<double>() < -100.0 || value.get<double>() > 100.0) {
      throw bad_request(param, "'logit_bias' values must be numbers in [-100, 100], got " +
                                   describe(value));
    }
    bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
  }
  return bias;
}

void reject_unsupported(const JsonFields& f, Endpoint endpoint) {
  if (f.get("functions") || f.get("function_call")) {
    throw unsupported("functions", "the legacy 'functions' / 'function_call' are not supported; use 'tools'");
  }
  if (endpoint == Endpoint::kCompletion) {
    if (const json* tools = f.get("tools"); tools && !(tools->is_array() && tools->empty())) {
      throw unsupported("tools", "'tools' are a chat completions feature (/v1/chat/completions)");
    }
    if (const auto b = f.integer("best_of", 1, 128); b && *b != 1) {
      throw unsupported("best_of", "only best_of=1 is supported");
    }
  }
}

// response_format {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}:
// the schema compiled (sampling/json_schema.h); what cannot be enforced is a 400.
template <typename Json>
std::shared_ptr<const sampling::JsonSchema> parse_json_schema(const Json& rf) {
  auto js = rf.find("json_schema");
  if (js == rf.end() || !js->is_object()) {
    throw bad_request("response_format", "response_format json_schema needs a 'json_schema' object", "invalid_type");
  }
  auto schema = js->find("schema");
  if (schema == js->end() || schema->is_null()) {
    return sampling::JsonSchema::compile(R"({"type": "object"})");  // no schema given: any object
  }
  try {
    return sampling::JsonSchema::compile(schema->dump());
  } catch (const keel::Error& e) {
    throw bad_request("response_format", std::string("response_format ") + e.what());
  }
}

// The schemas again from the body's text with their keys in the client's order (the
// request was validated already; only the texts change).
void keep_schema_order(std::string_view raw_body, CompletionRequest* req) {
  const bool schema = req->generation.json_constraint.schema != nullptr;
  if (raw_body.empty() || (req->tools.empty() && !schema)) return;
  const auto ordered = nlohmann::ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
  if (ordered.is_discarded() || !ordered.is_object()) return;
  try {  // .at(): the shapes were checked on `body`; a mismatch throws, never aborts
    for (size_t i = 0; i < req->tools.size(); ++i) {
      const auto& fn = ordered.at("tools").at(i).at("function");
      if (fn.contains("parameters") && fn.at("parameters").is_object()) {
        req->tools[i].parameters = fn.at("parameters").dump();
      }
    }
    if (schema) req->generation.json_constraint.schema = parse_json_schema(ordered.at("response_format"));
  } catch (const nlohmann::json::exception&) {
    // Keep the sorted-key texts.
  }
}

// Fields shared by both endpoints.
void parse_common(const json& body, const RequestLimits& limits, CompletionRequest* req) {
  const JsonFields f(body);
  reject_unsupported(f, req->endpoint);
  req->model = f.string("model").value_or("");
  req->user = f.string("user").value_or("");
  if (const auto n = f.integer("n", 1, limits.max_choices)) req->n = static_cast<int32_t>(*n);

  auto& gen = req->generation;
  if (const json* rf = f.object("response_format")) {
    const json* type = JsonFields(*rf).get("type");
    if (!type || !type->is_string()) {
      throw bad_request("response_format", "'response_format' needs a string 'type', got " + describe(*rf));
    }
    if (*type == "json_object") {
      gen.json_object = true;
    } else if (*type == "json_schema") {
      gen.json_object = true;
      gen.json_constraint.schema = parse_json_schema(*rf);
    } else if (*type != "text") {
      throw bad_request("response_format", "response_format type must be text, json_object or json_schema, got " +
                                               describe(*type));
    }
  }
  auto& s = gen.sampling;
  if (auto v = f.number("temperature", 0.0, 2.0)) s.temperature = static_cast<float>(*v);
  if (auto v = f.number("top_p", 0.0, 1.0)) {
    if (*v <= 0.0) throw bad_request("top_p", "'top_p' must be in (0, 1], got 0");
    s.top_p = static_cast<float>(*v);
  }
  if (auto v = f.integer("top_k", 0, kMaxInt32)) s.top_k = static_cast<int32_t>(*v);
  if (auto v = f.number("min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
  if (auto v = f.number("presence_penalty", -2.0, 2.0)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = f.number("frequency_penalty", -2.0, 2.0)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = f.number("repeat_penalty", 0.0, 10.0)) {
    if (*v <= 0.0) throw bad_request("repeat_penalty", "'repeat_penalty' must be > 0");
    s.repeat_penalty = static_cast<float>(*v);
  }
  if (const json* seed = f.get("seed")) {
    const auto v = as_integer(*seed);
    if (!seed->is_number() || !v) {
      throw bad_request("seed", "'seed' must be an integer, got " + describe(*seed), "invalid_type");
    }
    s.seed = static_cast<uint64_t>(*v);
    req->seed_given = true;
  }
  s.logit_bias = parse_logit_bias(f, limits);
  gen.stop = parse_stop(f, limits);

  // Completions take 0: nothing generated (with echo + logprobs, a prompt scored).
  std::optional<int64_t> max_tokens = f.integer("max_tokens", req->endpoint == Endpoint::kChat ? 1 : 0, kMaxInt32);
  if (req->endpoint == Endpoint::kChat) {
    if (auto v = f.integer("max_completion_tokens", 1, kMaxInt32)) max_tokens = v;
  } else if (!max_tokens) {
    max_tokens = limits.default_completion_max_tokens;
  }
  gen.max_tokens = max_tokens ? static_cast<int32_t>(*max_tokens) : -1;

  // keel extension (as llama-server): generate past end-of-generation tokens.
  gen.ignore_eos = f.boolean("ignore_eos").value_or(false);

  req->stream = f.boolean("stream").value_or(false);
  if (const json* so = f.object("stream_options")) {
    if (!req->stream) {
      throw bad_request("stream_options", "'stream_options' is only allowed when 'stream' is true");
    }
    req->include_usage = JsonFields(*so).boolean("include_usage").value_or(false);
  }
}

std::string message_content(const json& message, size_t index, const std::string& role) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) {
    if (role == "assistant") return "";
    throw bad_request(param, "'" + param + "' is required for role '" + role + "'");
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    throw bad_request(param, "'" + param + "' must be a string or an array of content parts, got " +
                                 describe(*it), "invalid_type");
  }
  std::string text;
  for (const json& part : *it) {
    const json* type = part.is_object() ? JsonFields(part).get("type") : nullptr;
    if (!type || !type->is_string()) {
      throw bad_request(param, "'" + param + "' parts must be objects with a 'type'", "invalid_type");
    }
    if (*type != "text") {
      throw unsupported(param, "content part type " + describe(*type) + " is not supported (text only)");
    }
    const json* t = JsonFields(part).get("text");
    if (!t || !t->is_string()) {
      throw bad_request(param, "'" + param + "' text parts need a string 'text'", "invalid_type");
    }
    text += t->get<std::string>();
  }
  return text;
}

std::vector<ChatMessage> parse_messages(const json& body) {
  const json* v = JsonFields(body).get("messages");
  if (!v) throw bad_request("messages", "'messages' is required", "missing_required_parameter");
  if (!v->is_array()) {
    throw bad_request("messages", "'messages' must be an array, got " + describe(*v), "invalid_type");
  }
  if (v->empty()) throw bad_request("messages", "'messages' must not be empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) {
      throw bad_request(param, "'" + param + "' must be an object, got " + describe(m), "invalid_type");
    }
    const auto role = JsonFields(m).string("role");
    if (!role) throw bad_request(param + ".role", "'" + param + ".role' is required");
    if (*role != "system" && *role != "developer" && *role != "user" && *role != "assistant" &&
        *role != "tool") {
      throw bad_request(param + ".role", "'" + param + ".role' must be one of system, developer, "
                                         "user, assistant, tool; got " + describe(m["role"]));
    }
    ChatMessage msg;
    msg.role = *role;
    msg.tool_calls = *role == "assistant" ? parse_message_tool_calls(m, param) : std::vector<chat::ToolCall>{};
    msg.content = message_content(m, i, *role);
    if (*role == "tool") {
      msg.tool_call_id = string_field(m, "tool_call_id", param, false);
      msg.name = string_field(m, "name", param, false);
    }
    out.push_back(std::move(msg));
  }
  return out;
}

std::vector<int32_t> token_list(const json& array, const std::string& param,
                                const RequestLimits& limits) {
  std::vector<int32_t> tokens;
  tokens.reserve(array.size());
  for (const json& t : array) tokens.push_back(token_id(t, param, limits));
  if (tokens.empty()) throw bad_request(param, "'" + param + "' must not be an empty token list");
  return tokens;
}

void parse_prompt(const json& body, const RequestLimits& limits, CompletionRequest* req) {
  const json* p = JsonFields(body).get("prompt");
  if (!p) throw bad_request("prompt", "'prompt' is required", "missing_required_parameter");
  if (p->is_string()) {
    req->prompts = {{p->get<std::string>(), {}}};
    return;
  }
  const std::string kind = "'prompt' must be a string, an array of strings, an array of token "
                           "ids, or an array of token arrays";
  if (!p->is_array()) throw bad_request("prompt", kind + ", got " + describe(*p), "invalid_type");
  if (p->empty()) throw bad_request("prompt", "'prompt' must not be empty");
  const json& first = p->front();
  if (first.is_number()) {
    req->prompts = {{std::nullopt, token_list(*p, "prompt", limits)}};
    return;
  }
  if (!first.is_string() && !first.is_array()) {
    throw bad_request("prompt", kind + ", found " + describe(first), "invalid_type");
  }
  for (const json& e : *p) {
    if (e.type() != first.type()) throw bad_request("prompt", kind + "; elements are mixed", "invalid_type");
  }
  if (p->size() > static_cast<size_t>(limits.max_prompts)) {
    throw bad_request("prompt", "'prompt' has " + std::to_string(p->size()) + " prompts; at most " +
                                    std::to_string(limits.max_prompts) + " are allowed in one request");
  }
  for (const json& e : *p) {
    if (e.is_string()) {
      req->prompts.push_back({e.get<std::string>(), {}});
    } else {
      req->prompts.push_back({std::nullopt, token_list(e, "prompt", limits)});
    }
  }
}

}  // namespace

CompletionRequest parse_chat_request(const json& body, const RequestLimits& limits, std::string_view raw_body) {
  CompletionRequest req;
  req.endpoint = Endpoint::kChat;
  req.messages = parse_messages(body);
  parse_common(body, limits, &req);
  req.tools = parse_tools(body);
  parse_tool_choice(body, &req);
  const JsonFields f(body);
  if (auto effort = f.string("reasoning_effort")) {
    // OpenAI's values; "minimal" reads as low (gpt-oss knows low, medium, high).
    if (*effort == "minimal") *effort = "low";
    if (*effort != "low" && *effort != "medium" && *effort != "high") {
      throw bad_request("reasoning_effort", "'reasoning_effort' must be minimal, low, medium or high, got " +
                                                describe(*f.get("reasoning_effort")));
    }
    req.reasoning_effort = *effort;
  }
  keep_schema_order(raw_body, &req);
  req.generation.sampling.logprobs = f.boolean("logprobs").value_or(false);
  if (auto top = f.integer("top_logprobs", 0, 20)) {
    if (!req.generation.sampling.logprobs) {
      throw bad_request("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
    }
    req.generation.sampling.top_logprobs = static_cast<int32_t>(*top);
  }
  return req;
}

CompletionRequest parse_completion_request(const json& body, const RequestLimits& limits, std::string_view raw_body) {
  CompletionRequest req;
  req.endpoint = Endpoint::kCompletion;
  parse_prompt(body, limits, &req);
  parse_common(body, limits, &req);
  const JsonFields f(body);
  const auto n = f.integer("logprobs", 0, 5);
  if (n) {
    req.generation.sampling.logprobs = true;
    req.generation.sampling.top_logprobs = static_cast<int32_t>(*n);
  }
  req.echo = f.boolean("echo").value_or(false);
  req.suffix = f.string("suffix");
  // Echoed prompts report their tokens' logprobs too (the engine scores the prompt).
  if (req.echo && n) req.generation.prompt_logprobs = static_cast<int32_t>(*n);
  keep_schema_order(raw_body, &req);
  return req;
}

}  // namespace keel::server
