#include "sampling/params.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace keel::sampling {
namespace {

[[noreturn]] void reject(const std::string& field, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "sampling parameter '" + field + "' " + why);
}

void require_finite(const char* field, float v) {
  if (!std::isfinite(v)) reject(field, "must be a finite number, got " + std::to_string(v));
}

}  // namespace

void SamplingParams::validate() const {
  require_finite("temperature", temperature);
  if (temperature < 0.0f) reject("temperature", "must be >= 0, got " + std::to_string(temperature));
  if (top_k < 0) reject("top_k", "must be >= 0 (0 disables it), got " + std::to_string(top_k));
  require_finite("top_p", top_p);
  if (!(top_p > 0.0f && top_p <= 1.0f)) reject("top_p", "must be in (0, 1], got " + std::to_string(top_p));
  require_finite("min_p", min_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) reject("min_p", "must be in [0, 1], got " + std::to_string(min_p));
  require_finite("typical_p", typical_p);
  if (!(typical_p > 0.0f && typical_p <= 1.0f)) {
    reject("typical_p", "must be in (0, 1], got " + std::to_string(typical_p));
  }
  require_finite("repeat_penalty", repeat_penalty);
  if (repeat_penalty <= 0.0f) {
    reject("repeat_penalty", "must be > 0 (1 disables it), got " + std::to_string(repeat_penalty));
  }
  require_finite("presence_penalty", presence_penalty);
  require_finite("frequency_penalty", frequency_penalty);
  if (penalty_last_n < -1) {
    reject("penalty_last_n", "must be >= -1 (-1 = all, 0 = off), got " + std::to_string(penalty_last_n));
  }
  if (top_logprobs < 0) reject("top_logprobs", "must be >= 0, got " + std::to_string(top_logprobs));
  for (const auto& [token, bias] : logit_bias) {
    const std::string field = "logit_bias[" + std::to_string(token) + "]";
    if (token < 0) reject(field, "names a negative token id");
    if (std::isnan(bias)) reject(field, "is NaN");
    if (bias > 0.0f && std::isinf(bias)) reject(field, "is +inf (use a large finite bias)");
  }
}

}  // namespace keel::sampling
