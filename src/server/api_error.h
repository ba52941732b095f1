// ApiError — an error answered to an HTTP client in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
//
// Contract:
//  - An ApiError is a keel::Error (so it can cross any keel boundary) that also carries
//    the HTTP status, OpenAI's error type, the offending request parameter (or empty)
//    and a short machine-readable code.
//  - from_error() maps any keel::Error to the status a client should see: bad input is a
//    4xx, an overloaded engine 429, everything keel-internal a 500. Plain value; no state.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace keel::server {

class ApiError : public keel::Error {
 public:
  ApiError(int status, std::string type, std::string code, std::string param,
           const std::string& message);

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& error_code() const { return code_; }
  const std::string& param() const { return param_; }

  // {"error": {...}}; "param" and "code" are null when empty.
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string type_;
  std::string code_;
  std::string param_;
};

// 400 invalid_request_error naming `param` (empty when the body as a whole is wrong).
ApiError bad_request(const std::string& param, const std::string& message,
                     const std::string& code = "invalid_value");
ApiError unauthorized(const std::string& message);
ApiError not_found(const std::string& message);
ApiError payload_too_large(const std::string& message);
ApiError busy(const std::string& message);                           // 429
ApiError unavailable(const std::string& code, const std::string& message);  // 503
ApiError internal_error(const std::string& message);                 // 500

// The ApiError a client should see for a keel::Error thrown below the HTTP layer.
ApiError from_error(const keel::Error& error);

}  // namespace keel::server
