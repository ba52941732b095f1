#include "server/llama_request.h"

#include <cmath>
#include <string>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace keel::server {
namespace {

using ordered = nlohmann::ordered_json;

// Samplers keel does not have: a 400 when the request turns one on.
void reject_inactive_samplers(const JsonFields& f) {
  auto reject = [](const std::string& param, const std::string& why) {
    throw bad_request(param, why, "unsupported");
  };
  if (auto g = f.string("grammar"); g && !g->empty()) {
    reject("grammar", "GBNF grammars are not supported; constrain the output with 'json_schema'");
  }
  const struct {
    const char* name;
    double off;
  } samplers[] = {{"mirostat", 0}, {"dry_multiplier", 0}, {"xtc_probability", 0}, {"dynatemp_range", 0}};
  for (const auto& s : samplers) {
    if (const json* v = f.get(s.name); v && v->is_number() && v->get<double>() != s.off) {
      reject(s.name, std::string("the '") + s.name + "' sampler is not supported (leave it at " +
                         std::to_string(static_cast<int>(s.off)) + ")");
    }
  }
  if (const json* v = f.get("top_n_sigma"); v && v->is_number() && v->get<double>() > 0) {
    reject("top_n_sigma", "the 'top_n_sigma' sampler is not supported (leave it at -1)");
  }
}

// logit_bias as llama-server takes it: an object (as OpenAI's), or [[token id, bias], ...]
// where a bias of false bans the token. Token texts (["Hello", -1]) are not taken.
ordered logit_bias_object(const json& v) {
  if (v.is_object()) return ordered(v);
  if (!v.is_array()) {
    throw bad_request("logit_bias", "'logit_bias' must be an object or an array of [token, bias] pairs, got " +
                                        describe(v), "invalid_type");
  }
  ordered out = ordered::object();
  for (const json& pair : v) {
    if (!pair.is_array() || pair.size() != 2) {
      throw bad_request("logit_bias", "'logit_bias' entries must be [token, bias] pairs, got " + describe(pair),
                        "invalid_type");
    }
    const auto id = as_integer(pair[0]);
    if (!pair[0].is_number() || !id) {
      throw bad_request("logit_bias", "'logit_bias' tokens must be ids (token texts are not supported), got " +
                                          describe(pair[0]), "unsupported");
    }
    // false: never this token (OpenAI's -100 bans it as well).
    out[std::to_string(*id)] = pair[1].is_boolean() && !pair[1].get<bool>() ? json(-100) : pair[1];
  }
  return out;
}

}  // namespace

LlamaCompletionRequest parse_llama_completion(const json& body, const RequestLimits& limits, std::string_view raw_body) {
  const JsonFields f(body);
  reject_inactive_samplers(f);
  // The request in OpenAI's words (ordered: a json_schema keeps the client's key order).
  const ordered raw = raw_body.empty() ? ordered(body) : ordered::parse(raw_body, nullptr, false);
  const ordered& src = raw.is_object() ? raw : ordered(body);
  ordered oa = ordered::object();
  if (const json* p = f.get("prompt")) {
    // A list of one prompt is that prompt (llama-server answers a list of several with an
    // array of results; /v1/completions is the route for several).
    const bool one_of_list = p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array());
    oa["prompt"] = one_of_list ? ordered((*p)[0]) : ordered(*p);
  }
  for (const char* key : {"model", "temperature", "top_k", "top_p", "min_p", "presence_penalty", "frequency_penalty",
                          "repeat_penalty", "stop", "stream", "ignore_eos"}) {
    if (f.get(key)) oa[key] = src.at(key);
  }
  // llama-server's sampler defaults, where OpenAI's would differ.
  const struct {
    const char* name;
    double value;
  } defaults[] = {{"temperature", 0.8}, {"top_k", 40}, {"top_p", 0.95}, {"min_p", 0.05}};
  for (const auto& d : defaults) {
    if (!oa.contains(d.name)) oa[d.name] = d.value;
  }
  if (const json* seed = f.get("seed")) {
    const auto v = as_integer(*seed);
    if (!seed->is_number() || !v) throw bad_request("seed", "'seed' must be an integer, got " + describe(*seed), "invalid_type");
    if (*v >= 0) oa["seed"] = *v;  // < 0 (llama-server's -1): a fresh seed
  }
  const char* limit_key = f.get("n_predict") ? "n_predict" : "max_tokens";
  if (const json* n = f.get(limit_key)) {
    const auto v = as_integer(*n);
    if (!n->is_number() || !v) {
      throw bad_request(limit_key, std::string("'") + limit_key + "' must be an integer, got " + describe(*n), "invalid_type");
    }
    if (*v >= 0) oa["max_tokens"] = *v;  // < 0: no limit
  }
  if (const json* lb = f.get("logit_bias")) oa["logit_bias"] = logit_bias_object(*lb);
  if (const json* schema = f.get("json_schema")) {
    if (!schema->is_object()) {
      throw bad_request("json_schema", "'json_schema' must be an object, got " + describe(*schema), "invalid_type");
    }
    oa["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", src.at("json_schema")}}}};
  }

  RequestLimits l = limits;
  l.default_completion_max_tokens = -1;  // llama-server's n_predict -1: no limit
  LlamaCompletionRequest out;
  const std::string text = oa.dump();
  out.request = parse_completion_request(json::parse(text), l, text);
  if (out.request.prompts.size() != 1) {
    throw bad_request("prompt", "/completion takes one prompt; send several to /v1/completions");
  }
  auto& s = out.request.generation.sampling;
  if (auto v = f.number("typical_p", 0.0, 1.0)) {
    if (*v <= 0.0) throw bad_request("typical_p", "'typical_p' must be in (0, 1], got 0");
    s.typical_p = static_cast<float>(*v);
  }
  if (auto v = f.integer("repeat_last_n", -1, 1 << 20)) s.penalty_last_n = static_cast<int32_t>(*v);
  if (auto v = f.integer("n_probs", 0, 20)) {
    out.n_probs = static_cast<int32_t>(*v);
    s.logprobs = out.n_probs > 0;
    s.top_logprobs = out.n_probs;
  }
  out.return_tokens = f.boolean("return_tokens").value_or(false);
  return out;
}

}  // namespace keel::server
