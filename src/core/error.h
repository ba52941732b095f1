// keel::Error — the one exception type keel throws for anything outside data or a
// violated precondition can cause. It carries a machine-readable code and a message
// that names the thing and the reason ("model.gguf: offset 1234: tensor 'x' ...").
// Nothing a request or a file can reach may abort the process: throw this instead.
#pragma once

#include <stdexcept>
#include <string>

namespace keel {

enum class ErrorCode {
  kInvalidArgument,  // a caller passed something out of range / malformed
  kInvalidFile,      // a file's contents are malformed
  kIo,               // open/read/mmap failed
  kUnsupported,      // valid but not implemented (unknown type, architecture)
  kNotFound,         // a named thing (tensor, key, token) is missing
  kOutOfMemory,      // a memory plan or allocation does not fit
  kBusy,             // queue full / overloaded
  kCancelled,        // work stopped by an explicit cancel
  kInternal,         // a broken invariant inside keel (a bug, reported, not aborted)
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace keel
