#include "server/api_error.h"

#include <utility>

namespace keel::server {

ApiError::ApiError(int status, std::string type, std::string code, std::string param,
                   const std::string& message)
    : keel::Error(status >= 500 ? ErrorCode::kInternal : ErrorCode::kInvalidArgument, message),
      status_(status),
      type_(std::move(type)),
      code_(std::move(code)),
      param_(std::move(param)) {}

nlohmann::json ApiError::to_json() const {
  nlohmann::json err = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) err["param"] = param_;
  if (!code_.empty()) err["code"] = code_;
  return {{"error", std::move(err)}};
}

ApiError bad_request(const std::string& param, const std::string& message,
                     const std::string& code) {
  return ApiError(400, "invalid_request_error", code, param, message);
}

ApiError unauthorized(const std::string& message) {
  return ApiError(401, "invalid_request_error", "invalid_api_key", "", message);
}

ApiError not_found(const std::string& message) {
  return ApiError(404, "invalid_request_error", "not_found", "", message);
}

ApiError payload_too_large(const std::string& message) {
  return ApiError(413, "invalid_request_error", "request_too_large", "", message);
}

ApiError busy(const std::string& message) {
  return ApiError(429, "rate_limit_error", "server_busy", "", message);
}

ApiError unavailable(const std::string& code, const std::string& message) {
  return ApiError(503, "unavailable_error", code, "", message);
}

ApiError internal_error(const std::string& message) {
  return ApiError(500, "server_error", "internal_error", "", message);
}

ApiError from_error(const keel::Error& error) {
  if (const auto* api = dynamic_cast<const ApiError*>(&error)) return *api;
  switch (error.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
      return bad_request("", error.what());
    case ErrorCode::kUnsupported:
      return bad_request("", error.what(), "unsupported");
    case ErrorCode::kBusy:
      return busy(error.what());
    case ErrorCode::kOutOfMemory:
      return unavailable("out_of_memory", error.what());
    case ErrorCode::kCancelled:
      return unavailable("cancelled", error.what());
    default:
      return internal_error(error.what());
  }
}

}  // namespace keel::server
