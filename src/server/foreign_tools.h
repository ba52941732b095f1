// Another API's tool list (the Responses API's, Anthropic's) in chat's shape, for the
// request readers that translate into a chat request.
#pragma once

#include <string>

#include "server/api_error.h"
#include "server/json_io.h"

namespace keel::server {

// Each element of `tools` (an object, else a 400 naming "tools[i]") becomes
// {"type": "function", "function": function_of(tool, "tools[i]")}; function_of throws a 400
// for a tool it cannot take.
template <class FunctionOf>
nlohmann::ordered_json chat_function_tools(const nlohmann::ordered_json& tools, FunctionOf function_of) {
  if (!tools.is_array()) throw bad_request("tools", "'tools' must be an array", "invalid_type");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    if (!tools[i].is_object()) throw bad_request(param, "'" + param + "' must be an object", "invalid_type");
    out.push_back({{"type", "function"}, {"function", function_of(tools[i], param)}});
  }
  return out;
}

}  // namespace keel::server
