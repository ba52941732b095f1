#include "cli/kv_type_option.h"

#include "core/error.h"

namespace keel::cli {

tensor::DType parse_kv_type(const std::string& name, const char* flag) {
  const auto t = tensor::dtype_from_name(name);
  if (!t) throw Error(ErrorCode::kInvalidArgument, std::string(flag) + ": unknown KV cache type '" + name + "'");
  return *t;
}

}  // namespace keel::cli
