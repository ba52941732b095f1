// Parsing of KV cache type flags (-ctk / -ctv) shared by the commands that load a model.
#pragma once

#include <string>

#include "tensor/types.h"

namespace keel::cli {

// "f16", "q8_0", ... → the type. Throws keel::Error(kInvalidArgument) naming `flag` and the
// value when it is not a type name (whether the KV cache supports it is the cache's check).
tensor::DType parse_kv_type(const std::string& name, const char* flag);

}  // namespace keel::cli
