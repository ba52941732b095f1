#include "server/responses_request.h"

#include <string>

#include "server/api_error.h"
#include "server/foreign_tools.h"
#include "server/json_fields.h"

namespace keel::server {
namespace {

using ordered = nlohmann::ordered_json;

ApiError unsupported(const std::string& param, const std::string& why) { return bad_request(param, why, "unsupported"); }

// A message item's content as chat content: a string, or its text parts joined.
std::string item_text(const ordered& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw bad_request(param, "'" + param + "' must be a string or an array of content parts, got " + describe(json(content)),
                      "invalid_type");
  }
  std::string text;
  for (const ordered& part : content) {
    const auto type = part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
    if (type.empty()) throw bad_request(param, "'" + param + "' parts must be objects with a 'type'", "invalid_type");
    if (type != "input_text" && type != "output_text" && type != "text") {
      throw unsupported(param, "content part type \"" + type + "\" is not supported (text only)");
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      throw bad_request(param, "'" + param + "' text parts need a string 'text'", "invalid_type");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

ordered chat_messages(const ordered& body) {
  ordered messages = ordered::array();
  if (body.contains("instructions") && !body["instructions"].is_null()) {
    if (!body["instructions"].is_string()) {
      throw bad_request("instructions", "'instructions' must be a string", "invalid_type");
    }
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  }
  if (!body.contains("input") || body["input"].is_null()) {
    throw bad_request("input", "'input' is required", "missing_required_parameter");
  }
  const ordered& input = body["input"];
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array()) throw bad_request("input", "'input' must be a string or an array of items", "invalid_type");
  for (size_t i = 0; i < input.size(); ++i) {
    const ordered& item = input[i];
    const std::string param = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) throw bad_request(param, "'" + param + "' must be an object", "invalid_type");
    const std::string type = item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>() : "message";
    auto text_field = [&](const char* name) {
      if (!item.contains(name) || !item[name].is_string()) {
        throw bad_request(param, "'" + param + "." + name + "' must be a string", "invalid_type");
      }
      return item[name];
    };
    if (type == "function_call") {
      // The model's earlier call: consecutive calls are one assistant turn.
      const ordered call = {{"id", text_field("call_id")},
                            {"type", "function"},
                            {"function", {{"name", text_field("name")}, {"arguments", text_field("arguments")}}}};
      if (messages.empty() || messages.back()["role"] != "assistant" || !messages.back().contains("tool_calls")) {
        messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ordered::array()}});
      }
      messages.back()["tool_calls"].push_back(call);
      continue;
    }
    if (type == "function_call_output") {
      messages.push_back({{"role", "tool"}, {"tool_call_id", text_field("call_id")}, {"content", text_field("output")}});
      continue;
    }
    if (type != "message") {
      throw unsupported(param, "input items of type \"" + type +
                                   "\" are not supported (message, function_call and function_call_output items)");
    }
    const std::string role = item.contains("role") && item["role"].is_string() ? item["role"].get<std::string>() : "";
    if (role != "user" && role != "system" && role != "developer" && role != "assistant") {
      throw bad_request(param, "'" + param + ".role' must be user, system, developer or assistant");
    }
    if (!item.contains("content")) throw bad_request(param, "'" + param + ".content' is required", "missing_required_parameter");
    messages.push_back({{"role", role}, {"content", item_text(item["content"], param + ".content")}});
  }
  if (messages.empty()) throw bad_request("input", "'input' must not be empty");
  return messages;
}

// Function tools in chat's shape: {type, name, description, parameters, strict} becomes
// {type, function: {name, description, parameters, strict}}. Hosted tools are a 400.
ordered chat_tools(const ordered& tools) {
  return chat_function_tools(tools, [](const ordered& t, const std::string& param) {
    const std::string type = t.contains("type") && t["type"].is_string() ? t["type"].get<std::string>() : "";
    if (type != "function") {
      throw unsupported(param, "tools of type \"" + type + "\" are not supported (function tools only)");
    }
    ordered fn = ordered::object();
    for (const char* k : {"name", "description", "parameters", "strict"}) {
      if (t.contains(k) && !t[k].is_null()) fn[k] = t[k];
    }
    return fn;
  });
}

}  // namespace

ResponsesRequest parse_responses_request(const json& body, const RequestLimits& limits, std::string_view raw_body) {
  const ordered parsed = raw_body.empty() ? ordered(body) : ordered::parse(raw_body, nullptr, false);
  const ordered& src = parsed.is_object() ? parsed : ordered(body);
  const JsonFields f(body);
  for (const char* stateful : {"previous_response_id", "conversation"}) {
    if (f.get(stateful)) throw unsupported(stateful, std::string("'") + stateful + "' needs stored responses; keel keeps none");
  }
  if (f.boolean("background").value_or(false)) throw unsupported("background", "background responses are not supported");
  if (auto t = f.string("truncation"); t && *t != "disabled") {
    throw unsupported("truncation", "only truncation \"disabled\" is supported (a prompt longer than the context is a 400)");
  }

  ResponsesRequest out;
  ordered chat = ordered::object();
  if (src.contains("model")) chat["model"] = src["model"];
  chat["messages"] = chat_messages(src);
  for (const char* key : {"temperature", "top_p", "stream", "user"}) {
    if (f.get(key)) chat[key] = src[key];
  }
  if (auto m = f.integer("max_output_tokens", 1, (int64_t{1} << 31) - 1)) {
    chat["max_tokens"] = *m;
    out.max_output_tokens = *m;
  }
  if (f.get("tools")) chat["tools"] = chat_tools(src["tools"]);
  if (const json* c = f.get("tool_choice")) {
    // {"type": "function", "name"} is chat's {"type": "function", "function": {"name"}}.
    const ordered& choice = src["tool_choice"];
    if (c->is_object() && choice.contains("name")) {
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
    } else {
      chat["tool_choice"] = choice;
    }
  }
  if (f.get("parallel_tool_calls")) chat["parallel_tool_calls"] = src["parallel_tool_calls"];
  if (const json* r = f.object("reasoning")) {
    if (const json* e = JsonFields(*r).get("effort")) chat["reasoning_effort"] = *e;
  }
  if (const json* text = f.object("text")) {
    if (const json* format = JsonFields(*text).object("format")) {
      const ordered& fmt = src["text"]["format"];
      const std::string type = fmt.contains("type") && fmt["type"].is_string() ? fmt["type"].get<std::string>() : "";
      if (type == "json_object") {
        chat["response_format"] = {{"type", "json_object"}};
      } else if (type == "json_schema") {
        ordered js = ordered::object();
        for (const char* k : {"name", "schema", "strict"}) {
          if (fmt.contains(k)) js[k] = fmt[k];
        }
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", js}};
      } else if (type != "text") {
        throw bad_request("text.format", "text.format type must be text, json_object or json_schema, got " + describe(*format));
      }
      out.text_format = *format;
    }
  }
  if (const json* i = f.get("instructions"); i && i->is_string()) out.instructions = i->get<std::string>();
  const std::string text = chat.dump();
  out.chat = parse_chat_request(json::parse(text), limits, text);
  return out;
}

}  // namespace keel::server
