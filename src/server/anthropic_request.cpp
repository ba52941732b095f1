#include "server/anthropic_request.h"

#include <string>

#include "server/api_error.h"
#include "server/foreign_tools.h"
#include "server/json_fields.h"

namespace keel::server {
namespace {

using ordered = nlohmann::ordered_json;

ApiError unsupported(const std::string& param, const std::string& why) { return bad_request(param, why, "unsupported"); }

std::string block_type(const ordered& block) {
  return block.is_object() && block.contains("type") && block["type"].is_string() ? block["type"].get<std::string>() : "";
}

std::string text_of(const ordered& block, const std::string& param) {
  if (!block.contains("text") || !block["text"].is_string()) {
    throw bad_request(param, "'" + param + "' text blocks need a string 'text'", "invalid_type");
  }
  return block["text"].get<std::string>();
}

// A system prompt or a tool result's content: a string, or text blocks joined.
std::string plain_text(const ordered& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) throw bad_request(param, "'" + param + "' must be a string or an array of text blocks", "invalid_type");
  std::string out;
  for (const ordered& b : v) {
    if (block_type(b) != "text") throw unsupported(param, "'" + param + "' may hold text blocks only");
    out += text_of(b, param);
  }
  return out;
}

// One Anthropic message as chat messages (a user's tool results become tool turns first).
void add_message(const ordered& m, size_t index, ordered& out) {
  const std::string param = "messages[" + std::to_string(index) + "]";
  if (!m.is_object()) throw bad_request(param, "'" + param + "' must be an object", "invalid_type");
  const std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
  if (role != "user" && role != "assistant") throw bad_request(param, "'" + param + ".role' must be user or assistant");
  if (!m.contains("content")) throw bad_request(param, "'" + param + ".content' is required", "missing_required_parameter");
  const ordered& content = m["content"];
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return;
  }
  if (!content.is_array()) {
    throw bad_request(param, "'" + param + ".content' must be a string or an array of blocks", "invalid_type");
  }
  std::string text;
  ordered calls = ordered::array();
  for (size_t j = 0; j < content.size(); ++j) {
    const ordered& b = content[j];
    const std::string bp = param + ".content[" + std::to_string(j) + "]";
    const std::string type = block_type(b);
    if (type == "text") {
      text += text_of(b, bp);
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string()) {
        throw bad_request(bp, "'" + bp + "' tool_use blocks need string 'id' and 'name'", "invalid_type");
      }
      const ordered input = b.contains("input") ? b["input"] : ordered::object();
      calls.push_back({{"id", b["id"]}, {"type", "function"}, {"function", {{"name", b["name"]}, {"arguments", input.dump()}}}});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        throw bad_request(bp, "'" + bp + "' tool_result blocks need a string 'tool_use_id'", "invalid_type");
      }
      const std::string result = b.contains("content") ? plain_text(b["content"], bp + ".content") : std::string();
      out.push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", result}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      // Earlier turns' thinking is not shown to the model again (as Anthropic drops it).
    } else {
      throw unsupported(bp, "content blocks of type \"" + type + "\" are not supported here (text" +
                                (role == "assistant" ? ", tool_use" : ", tool_result") + ")");
    }
  }
  if (role == "assistant") {
    ordered msg = {{"role", "assistant"}, {"content", text.empty() && !calls.empty() ? ordered(nullptr) : ordered(text)}};
    if (!calls.empty()) msg["tool_calls"] = calls;
    out.push_back(msg);
  } else if (!text.empty() || out.empty() || out.back()["role"] != "tool") {
    out.push_back({{"role", "user"}, {"content", text}});
  }
}

ordered chat_tools(const ordered& tools) {
  return chat_function_tools(tools, [](const ordered& t, const std::string& param) {
    if (t.contains("type") && t["type"] != "custom") {
      throw unsupported(param, "server tools (\"type\": " + t["type"].dump() + ") are not supported; client tools only");
    }
    ordered fn = ordered::object();
    if (t.contains("name")) fn["name"] = t["name"];
    if (t.contains("description")) fn["description"] = t["description"];
    fn["parameters"] = t.contains("input_schema") ? t["input_schema"] : ordered({{"type", "object"}});
    return fn;
  });
}

ordered chat_tool_choice(const ordered& c) {
  const std::string type = block_type(c);
  if (type == "auto") return "auto";
  if (type == "any") return "required";
  if (type == "none") return "none";
  if (type == "tool" && c.contains("name")) return {{"type", "function"}, {"function", {{"name", c["name"]}}}};
  throw bad_request("tool_choice", "'tool_choice' must be {type: auto | any | none} or {type: tool, name}");
}

}  // namespace

CompletionRequest parse_anthropic_request(const json& body, const RequestLimits& limits, std::string_view raw_body) {
  const ordered parsed = raw_body.empty() ? ordered(body) : ordered::parse(raw_body, nullptr, false);
  const ordered& src = parsed.is_object() ? parsed : ordered(body);
  const JsonFields f(body);
  if (const json* thinking = f.object("thinking"); thinking && JsonFields(*thinking).string("type") == "enabled") {
    throw unsupported("thinking", "extended thinking is not supported");
  }
  ordered chat = ordered::object();
  if (src.contains("model")) chat["model"] = src["model"];
  ordered messages = ordered::array();
  if (f.get("system")) messages.push_back({{"role", "system"}, {"content", plain_text(src["system"], "system")}});
  const json* m = f.get("messages");
  if (!m) throw bad_request("messages", "'messages' is required", "missing_required_parameter");
  if (!m->is_array() || m->empty()) throw bad_request("messages", "'messages' must be a non-empty array", "invalid_type");
  for (size_t i = 0; i < src["messages"].size(); ++i) add_message(src["messages"][i], i, messages);
  chat["messages"] = messages;
  const auto max_tokens = f.integer("max_tokens", 1, (int64_t{1} << 31) - 1);
  if (!max_tokens) throw bad_request("max_tokens", "'max_tokens' is required", "missing_required_parameter");
  chat["max_tokens"] = *max_tokens;
  if (auto t = f.number("temperature", 0.0, 1.0)) chat["temperature"] = *t;
  for (const char* key : {"top_p", "top_k", "stream"}) {
    if (f.get(key)) chat[key] = src[key];
  }
  if (f.get("stop_sequences")) chat["stop"] = src["stop_sequences"];
  if (f.get("tools")) chat["tools"] = chat_tools(src["tools"]);
  if (f.get("tool_choice")) {
    const ordered& c = src["tool_choice"];
    chat["tool_choice"] = chat_tool_choice(c);
    if (c.contains("disable_parallel_tool_use") && c["disable_parallel_tool_use"] == true) chat["parallel_tool_calls"] = false;
  }
  const std::string text = chat.dump();
  return parse_chat_request(json::parse(text), limits, text);
}

}  // namespace keel::server
