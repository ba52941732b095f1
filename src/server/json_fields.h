// Typed, range-checked reads of optional fields from a request's JSON object.
//
// Contract:
//  - A missing field or an explicit null yields nullopt (OpenAI treats null as "not
//    given"). A present field of the wrong type or out of range throws ApiError 400
//    naming the field ("'temperature' must be a number in [0, 2], got \"hot\"").
//  - Numbers must be finite; integers must be JSON integers (1.0 is accepted, 1.5 not).
//  - The reader only borrows the object; it must outlive the reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/json_io.h"

namespace keel::server {

class JsonFields {
 public:
  explicit JsonFields(const json& object) : object_(object) {}

  const json* get(const std::string& name) const;  // nullptr when absent or null
  std::optional<double> number(const std::string& name, double lo, double hi) const;
  std::optional<int64_t> integer(const std::string& name, int64_t lo, int64_t hi) const;
  std::optional<bool> boolean(const std::string& name) const;
  std::optional<std::string> string(const std::string& name) const;
  const json* object(const std::string& name) const;

 private:
  const json& object_;
};

// A short rendering of a value for error messages (truncated).
std::string describe(const json& value);

// `value` as an int64 if it is a JSON integer (or an integral float), else nullopt.
std::optional<int64_t> as_integer(const json& value);

}  // namespace keel::server
