#include "chat/tools.h"

#include <nlohmann/json.hpp>

#include "chat/template.h"
#include "chat/turns.h"
#include "core/json_depth.h"

namespace keel::chat {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";

// The function as OpenAI's request names it: {"type": "function", "function": {...}}.
ordered_json tool_json(const ToolSpec& t) {
  ordered_json fn = {{"name", t.name}};
  if (!t.description.empty()) fn["description"] = t.description;
  fn["parameters"] = ordered_json::parse(t.parameters, nullptr, /*allow_exceptions=*/false);
  if (fn["parameters"].is_discarded()) fn["parameters"] = ordered_json::object();
  return {{"type", "function"}, {"function", std::move(fn)}};
}

// Arguments text as an object (a malformed one — history is the caller's — is kept as a string).
ordered_json arguments_json(const std::string& text) {
  ordered_json v = ordered_json::parse(text, nullptr, false);
  if (v.is_discarded()) return text;
  return v;
}

// Python json.dumps separators (", " and ": "), which the families' templates produce.
std::string dumps(const ordered_json& v) {
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += ordered_json(k).dump() + ": " + dumps(x);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + dumps(v[i]);
    return out + "]";
  }
  return v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

std::string hermes_instructions(std::span<const ToolSpec> tools) {
  std::string s =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const ToolSpec& t : tools) s += "\n" + dumps(tool_json(t));
  s += "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
       "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
       "<args-json-object>}\n</tool_call>";
  return s;
}

std::string llama3_instructions(std::span<const ToolSpec> tools) {
  std::string s =
      "Given the following functions, please respond with a JSON for a function call with its proper "
      "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
      "\"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n";
  for (const ToolSpec& t : tools) s += tool_json(t).dump(4) + "\n\n";
  return s;
}

std::vector<Message> apply_hermes(std::span<const Message> messages, std::span<const ToolSpec> tools) {
  std::vector<Message> out;
  const std::string block = tools.empty() ? "" : hermes_instructions(tools);
  if (tools.empty()) {
    // History only: no functions to announce.
  } else if (!messages.empty() && is_instruction(messages.front().role)) {
    out.push_back(messages.front());
    out.back().content += "\n\n" + block;
    messages = messages.subspan(1);
  } else {
    out.push_back(Message{Role::kSystem, block});
  }
  for (const Message& m : messages) {
    if (m.role == Role::kTool) {
      const std::string wrapped = "<tool_response>\n" + m.content + "\n</tool_response>";
      // Consecutive results share one user turn, as Qwen's template writes them.
      if (!out.empty() && out.back().role == Role::kUser && out.back().content.starts_with("<tool_response>")) {
        out.back().content += "\n" + wrapped;
      } else {
        out.push_back(Message{Role::kUser, wrapped});
      }
      continue;
    }
    out.push_back(m);
    if (m.role == Role::kAssistant && !m.tool_calls.empty()) {
      Message& a = out.back();
      const std::string calls = format_tool_calls(ToolSyntax::kHermes, m.tool_calls);
      a.content = a.content.empty() ? calls : a.content + "\n" + calls;
      a.tool_calls.clear();
    }
  }
  return out;
}

std::vector<Message> apply_llama3(std::span<const Message> messages, std::span<const ToolSpec> tools) {
  std::vector<Message> out(messages.begin(), messages.end());
  bool placed = tools.empty();  // history only: no functions to announce
  for (Message& m : out) {
    if (m.role == Role::kUser && !placed) {
      m.content = llama3_instructions(tools) + m.content;
      placed = true;
    }
    if (m.role == Role::kAssistant && !m.tool_calls.empty()) {
      m.content = format_tool_calls(ToolSyntax::kLlama3, m.tool_calls);
      m.tool_calls.clear();
    }
  }
  if (!placed) out.push_back(Message{Role::kUser, llama3_instructions(tools)});
  return out;
}

std::vector<Message> apply_mistral(std::span<const Message> messages) {
  std::vector<Message> out(messages.begin(), messages.end());
  for (Message& m : out) {
    if (m.role == Role::kAssistant && !m.tool_calls.empty()) {
      m.content = format_tool_calls(ToolSyntax::kMistral, m.tool_calls);
      m.tool_calls.clear();
    } else if (m.role == Role::kTool) {
      ordered_json r = {{"content", m.content}};
      if (!m.tool_call_id.empty()) r["call_id"] = m.tool_call_id;
      m.content = dumps(r);
    }
  }
  return out;
}

// One call object: a string name and an object of arguments (a JSON string holding an
// object is accepted too: some models quote them).
bool read_call(const ordered_json& v, std::string_view args_key, ToolCall* call) {
  if (!v.is_object()) return false;
  auto name = v.find("name");
  if (name == v.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  auto args = v.find(args_key);
  if (args == v.end()) args = v.find("arguments");
  ordered_json a = args == v.end() ? ordered_json::object() : *args;
  if (a.is_string()) a = ordered_json::parse(a.get<std::string>(), nullptr, false);
  if (!a.is_object()) return false;
  call->name = name->get<std::string>();
  call->arguments = a.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  return true;
}

ParsedReply as_content(std::string_view text) { return {std::string(text), {}}; }

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Splits `s` into top-level JSON objects separated by whitespace and at most one `sep`
// between two (0: none); false when anything else is there or an object is unterminated.
bool object_sequence(std::string_view s, char sep, std::vector<std::string_view>* out) {
  size_t i = 0;
  const auto skip_space = [&] {
    while (i < s.size() && is_space(s[i])) ++i;
  };
  skip_space();
  while (i < s.size()) {
    if (s[i] != '{') return false;
    const size_t start = i;
    JsonDepth depth;
    bool closed = false;
    for (; i < s.size() && !closed; ++i) closed = depth.push(s[i]) == 0;
    if (!closed) return false;
    out->push_back(s.substr(start, i - start));
    skip_space();
    if (sep != 0 && i < s.size() && s[i] == sep) {
      ++i;
      skip_space();
    }
  }
  return !out->empty();
}

// Every object of the sequence a call (see read_call), or false.
bool read_calls(std::string_view s, char sep, std::string_view args_key, std::vector<ToolCall>* calls) {
  std::vector<std::string_view> objects;
  if (!object_sequence(s, sep, &objects)) return false;
  for (std::string_view o : objects) {
    const ordered_json v = ordered_json::parse(o, nullptr, false);
    ToolCall call;
    if (v.is_discarded() || !read_call(v, args_key, &call)) return false;
    calls->push_back(std::move(call));
  }
  return true;
}

ParsedReply parse_hermes(std::string_view text) {
  ParsedReply out;
  size_t pos = 0;
  std::string content;
  for (;;) {
    const size_t open = text.find(kHermesOpen, pos);
    if (open == std::string_view::npos) {
      content += text.substr(pos);
      break;
    }
    content += text.substr(pos, open - pos);
    const size_t body = open + kHermesOpen.size();
    size_t close = text.find(kHermesClose, body);
    const size_t end = close == std::string_view::npos ? text.size() : close;
    const ordered_json v = ordered_json::parse(text.substr(body, end - body), nullptr, false);
    ToolCall call;
    if (v.is_discarded() || !read_call(v, "arguments", &call)) return as_content(text);
    out.calls.push_back(std::move(call));
    pos = close == std::string_view::npos ? text.size() : close + kHermesClose.size();
  }
  if (out.calls.empty()) {
    // No tag in the text: where <tool_call> is a control token (some conversions mark it
    // so) it is invisible, and the reply is the bare call objects.
    if (!read_calls(text, 0, "arguments", &out.calls)) return as_content(text);
    return out;
  }
  out.content = detail::trim(content);
  return out;
}

ParsedReply parse_llama3(std::string_view text) {
  std::string body = detail::trim(text);
  if (body.starts_with("<|python_tag|>")) body = detail::trim(body.substr(14));
  ParsedReply out;
  if (!read_calls(body, ';', "parameters", &out.calls)) return as_content(text);
  return out;
}

ParsedReply parse_mistral(std::string_view text) {
  const size_t marker = text.find(kMistralMarker);
  std::string content = marker == std::string_view::npos ? "" : detail::trim(text.substr(0, marker));
  const std::string body =
      detail::trim(marker == std::string_view::npos ? text : text.substr(marker + kMistralMarker.size()));
  if (!body.starts_with("[")) return as_content(text);
  const ordered_json v = ordered_json::parse(body, nullptr, false);
  if (v.is_discarded() || !v.is_array() || v.empty()) return as_content(text);
  ParsedReply out;
  for (const ordered_json& c : v) {
    ToolCall call;
    if (!read_call(c, "arguments", &call)) return as_content(text);
    out.calls.push_back(std::move(call));
  }
  out.content = std::move(content);
  return out;
}

// Length of text minus its longest suffix that is a proper prefix of `marker`.
size_t before_partial_marker(std::string_view text, std::string_view marker) {
  const size_t found = text.find(marker);
  if (found != std::string_view::npos) return found;
  for (size_t k = std::min(marker.size() - 1, text.size()); k > 0; --k) {
    if (text.substr(text.size() - k) == marker.substr(0, k)) return text.size() - k;
  }
  return text.size();
}

// For syntaxes where a call is the whole reply: nothing is content while the reply (after
// leading whitespace) is empty or starts like a call.
size_t hold_if_starts(std::string_view text, std::string_view starts) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) ++i;
  if (i == text.size()) return 0;
  return starts.find(text[i]) != std::string_view::npos ? 0 : text.size();
}

}  // namespace

ToolSyntax tool_syntax(ChatFamily family) {
  switch (family) {
    case ChatFamily::kLlama3: return ToolSyntax::kLlama3;
    case ChatFamily::kMistralV3:
    case ChatFamily::kMistralV3Tekken:
    case ChatFamily::kMistralV7:
    case ChatFamily::kMistralV7Tekken: return ToolSyntax::kMistral;
    case ChatFamily::kHarmony: return ToolSyntax::kNone;
    default: return ToolSyntax::kHermes;
  }
}

std::vector<Message> apply_tools(ToolSyntax syntax, std::span<const Message> messages,
                                 std::span<const ToolSpec> tools) {
  switch (syntax) {
    case ToolSyntax::kHermes: return apply_hermes(messages, tools);
    case ToolSyntax::kLlama3: return apply_llama3(messages, tools);
    case ToolSyntax::kMistral: return apply_mistral(messages);  // tools: the renderer's block
    case ToolSyntax::kNone: break;
  }
  return {messages.begin(), messages.end()};
}

std::string mistral_tools_block(std::span<const ToolSpec> tools) {
  ordered_json list = ordered_json::array();
  for (const ToolSpec& t : tools) list.push_back(tool_json(t));
  return dumps(list);
}

ParsedReply parse_tool_calls(ToolSyntax syntax, std::string_view text) {
  switch (syntax) {
    case ToolSyntax::kHermes: return parse_hermes(text);
    case ToolSyntax::kLlama3: return parse_llama3(text);
    case ToolSyntax::kMistral: return parse_mistral(text);
    case ToolSyntax::kNone: break;
  }
  return as_content(text);
}

size_t content_prefix_length(ToolSyntax syntax, std::string_view text) {
  switch (syntax) {
    // A reply opening with '{' may be calls whose tags are invisible: held to the end.
    case ToolSyntax::kHermes: return std::min(before_partial_marker(text, kHermesOpen), hold_if_starts(text, "{"));
    case ToolSyntax::kLlama3: return hold_if_starts(text, "{<");
    case ToolSyntax::kMistral: return std::min(hold_if_starts(text, "["), before_partial_marker(text, kMistralMarker));
    case ToolSyntax::kNone: break;
  }
  return text.size();
}

std::string call_opening(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes: return "<tool_call>\n{\"name\": \"";
    case ToolSyntax::kLlama3: return "{\"name\": \"";
    case ToolSyntax::kMistral: return "[TOOL_CALLS][{\"name\": \"";
    case ToolSyntax::kNone: break;
  }
  return "";
}

std::string call_name_end(ToolSyntax syntax) {
  return syntax == ToolSyntax::kLlama3 ? "\", \"parameters\": " : "\", \"arguments\": ";
}

std::string call_closing(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes: return "}\n</tool_call>";
    case ToolSyntax::kLlama3: return "}";
    case ToolSyntax::kMistral: return "}]";
    case ToolSyntax::kNone: break;
  }
  return "";
}

std::string format_tool_calls(ToolSyntax syntax, std::span<const ToolCall> calls) {
  std::string out;
  if (syntax == ToolSyntax::kMistral) {
    ordered_json list = ordered_json::array();
    for (const ToolCall& c : calls) {
      ordered_json one = {{"name", c.name}, {"arguments", arguments_json(c.arguments)}};
      if (!c.id.empty()) one["id"] = c.id;
      list.push_back(std::move(one));
    }
    return std::string(kMistralMarker) + dumps(list);
  }
  for (const ToolCall& c : calls) {
    ordered_json one = {{"name", c.name},
                        {syntax == ToolSyntax::kLlama3 ? "parameters" : "arguments", arguments_json(c.arguments)}};
    if (syntax == ToolSyntax::kLlama3) {
      out += (out.empty() ? "" : "; ") + dumps(one);
    } else {
      out += (out.empty() ? "" : "\n") + std::string(kHermesOpen) + "\n" + dumps(one) + "\n" + std::string(kHermesClose);
    }
  }
  return out;
}

}  // namespace keel::chat
