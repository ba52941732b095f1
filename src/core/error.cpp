#include "core/error.h"

namespace keel {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kInvalidFile: return "invalid_file";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kOutOfMemory: return "out_of_memory";
    case ErrorCode::kBusy: return "busy";
    case ErrorCode::kCancelled: return "cancelled";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

}  // namespace keel
