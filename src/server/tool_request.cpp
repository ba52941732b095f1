#include "server/tool_request.h"

#include <algorithm>
#include <cctype>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace keel::server {
namespace {

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// obj[key] as an object, or a 400 naming param.key.
const json& object_field(const json& obj, const char* key, const std::string& param) {
  auto it = obj.find(key);
  const std::string where = param + "." + key;
  if (it == obj.end() || !it->is_object()) {
    throw bad_request(where, "'" + where + "' must be an object" +
                                 (it == obj.end() ? std::string() : ", got " + describe(*it)), "invalid_type");
  }
  return *it;
}

// A "type" other than "function" is a 400 (absent is fine: clients omit it).
void check_function_type(const json& obj, const std::string& param) {
  auto type = obj.find("type");
  if (type != obj.end() && !type->is_null() && *type != "function") {
    throw bad_request(param + ".type", "'" + param + ".type' must be \"function\", got " + describe(*type));
  }
}

}  // namespace

std::string string_field(const json& obj, const char* key, const std::string& param, bool required) {
  auto it = obj.find(key);
  const std::string where = param + "." + key;
  if (it == obj.end() || it->is_null()) {
    if (required) throw bad_request(where, "'" + where + "' is required", "missing_required_parameter");
    return "";
  }
  if (!it->is_string()) throw bad_request(where, "'" + where + "' must be a string, got " + describe(*it), "invalid_type");
  return it->get<std::string>();
}

std::vector<chat::ToolCall> parse_message_tool_calls(const json& message, const std::string& param) {
  auto it = message.find("tool_calls");
  if (it == message.end() || it->is_null()) return {};
  const std::string where = param + ".tool_calls";
  if (!it->is_array()) throw bad_request(where, "'" + where + "' must be an array, got " + describe(*it), "invalid_type");
  std::vector<chat::ToolCall> calls;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& c = (*it)[i];
    const std::string p = where + "[" + std::to_string(i) + "]";
    if (!c.is_object()) throw bad_request(p, "'" + p + "' must be an object, got " + describe(c), "invalid_type");
    check_function_type(c, p);
    const json& fn = object_field(c, "function", p);
    chat::ToolCall call;
    call.id = string_field(c, "id", p, false);
    call.name = string_field(fn, "name", p + ".function", true);
    // OpenAI sends the arguments as JSON text; an object is taken as it is.
    auto args = fn.find("arguments");
    if (args != fn.end() && args->is_object()) {
      call.arguments = args->dump();
    } else {
      call.arguments = string_field(fn, "arguments", p + ".function", false);
      if (call.arguments.empty()) call.arguments = "{}";
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

std::vector<chat::ToolSpec> parse_tools(const json& body) {
  const json* v = JsonFields(body).get("tools");
  if (!v) return {};
  if (!v->is_array()) throw bad_request("tools", "'tools' must be an array, got " + describe(*v), "invalid_type");
  constexpr size_t kMaxTools = 128;  // OpenAI's limit
  if (v->size() > kMaxTools) {
    throw bad_request("tools", "'tools' has " + std::to_string(v->size()) + " functions; at most 128 are allowed");
  }
  std::vector<chat::ToolSpec> tools;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& t = (*v)[i];
    const std::string p = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) throw bad_request(p, "'" + p + "' must be an object, got " + describe(t), "invalid_type");
    check_function_type(t, p);
    const json& fn = object_field(t, "function", p);
    chat::ToolSpec spec;
    spec.name = string_field(fn, "name", p + ".function", true);
    if (!valid_function_name(spec.name)) {
      throw bad_request(p + ".function.name", "'" + p + ".function.name' must be 1-64 letters, digits, '_' or '-', got " +
                                                  describe(fn["name"]));
    }
    for (const chat::ToolSpec& other : tools) {
      if (other.name == spec.name) throw bad_request(p + ".function.name", "function '" + spec.name + "' is listed twice");
    }
    spec.description = string_field(fn, "description", p + ".function", false);
    auto params = fn.find("parameters");
    if (params == fn.end() || params->is_null()) {
      spec.parameters = R"({"type":"object","properties":{}})";
    } else if (!params->is_object()) {
      throw bad_request(p + ".function.parameters", "'" + p + ".function.parameters' must be a JSON Schema object, got " +
                                                        describe(*params), "invalid_type");
    } else {
      spec.parameters = params->dump();
    }
    tools.push_back(std::move(spec));
  }
  return tools;
}

void parse_tool_choice(const json& body, CompletionRequest* req) {
  const JsonFields f(body);
  req->parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  req->tool_choice = req->tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  const json* c = f.get("tool_choice");
  if (!c) return;
  if (c->is_string()) {
    if (*c == "none") {
      req->tool_choice = ToolChoice::kNone;
    } else if (*c == "auto") {
      req->tool_choice = ToolChoice::kAuto;
    } else if (*c == "required") {
      req->tool_choice = ToolChoice::kRequired;
    } else {
      throw bad_request("tool_choice", "'tool_choice' must be none, auto, required or a function, got " + describe(*c));
    }
  } else if (c->is_object()) {
    check_function_type(*c, "tool_choice");
    req->tool_choice_name = string_field(object_field(*c, "function", "tool_choice"), "name", "tool_choice.function", true);
    req->tool_choice = ToolChoice::kFunction;
    const bool listed = std::any_of(req->tools.begin(), req->tools.end(),
                                    [&](const chat::ToolSpec& t) { return t.name == req->tool_choice_name; });
    if (!listed) {
      throw bad_request("tool_choice", "'tool_choice' names function '" + sanitize_utf8(req->tool_choice_name) +
                                           "', which is not in 'tools'");
    }
  } else {
    throw bad_request("tool_choice", "'tool_choice' must be a string or an object, got " + describe(*c), "invalid_type");
  }
  if (req->tool_choice != ToolChoice::kNone && req->tools.empty()) {
    throw bad_request("tool_choice", "'tool_choice' needs 'tools' to choose from");
  }
}

}  // namespace keel::server
