#include "model/architecture.h"

#include <functional>
#include <map>

#include "core/error.h"

namespace keel::model {

std::unique_ptr<Architecture> make_architecture(const std::string& name) {
  static const std::map<std::string, std::function<std::unique_ptr<Architecture>()>> table = {
      {"llama", make_llama},
      {"qwen2", make_qwen2},
      {"qwen3", make_qwen3},
      {"gemma2", make_gemma2},
      {"gemma3", make_gemma3},
      {"gpt-oss", make_gpt_oss},
  };
  auto it = table.find(name);
  if (it == table.end()) {
    std::string known;
    for (const auto& [k, _] : table) known += (known.empty() ? "" : ", ") + k;
    throw Error(ErrorCode::kUnsupported,
                "architecture '" + name + "' is not supported (known: " + known + ")");
  }
  return it->second();
}

}  // namespace keel::model
