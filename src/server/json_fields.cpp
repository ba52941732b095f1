#include "server/json_fields.h"

#include <cmath>
#include <cstdio>

#include "server/api_error.h"

namespace keel::server {
namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string range_text(double lo, double hi) { return "[" + number_text(lo) + ", " + number_text(hi) + "]"; }

}  // namespace

std::string describe(const json& value) {
  std::string text = dump(value);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

std::optional<int64_t> as_integer(const json& value) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX)) {
      return std::nullopt;
    }
    return value.get<int64_t>();
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

const json* JsonFields::get(const std::string& name) const {
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> JsonFields::number(const std::string& name, double lo, double hi) const {
  const json* v = get(name);
  if (!v) return std::nullopt;
  const std::string want = "'" + name + "' must be a number in " + range_text(lo, hi);
  if (!v->is_number()) throw bad_request(name, want + ", got " + describe(*v), "invalid_type");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) throw bad_request(name, want + ", got " + describe(*v));
  return d;
}

std::optional<int64_t> JsonFields::integer(const std::string& name, int64_t lo,
                                           int64_t hi) const {
  const json* v = get(name);
  if (!v) return std::nullopt;
  const std::string want = "'" + name + "' must be an integer in [" + std::to_string(lo) +
                           ", " + std::to_string(hi) + "]";
  if (!v->is_number()) throw bad_request(name, want + ", got " + describe(*v), "invalid_type");
  const auto i = as_integer(*v);
  if (!i || *i < lo || *i > hi) throw bad_request(name, want + ", got " + describe(*v));
  return i;
}

std::optional<bool> JsonFields::boolean(const std::string& name) const {
  const json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    throw bad_request(name, "'" + name + "' must be a boolean, got " + describe(*v),
                      "invalid_type");
  }
  return v->get<bool>();
}

std::optional<std::string> JsonFields::string(const std::string& name) const {
  const json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    throw bad_request(name, "'" + name + "' must be a string, got " + describe(*v),
                      "invalid_type");
  }
  return v->get<std::string>();
}

const json* JsonFields::object(const std::string& name) const {
  const json* v = get(name);
  if (v && !v->is_object()) {
    throw bad_request(name, "'" + name + "' must be an object, got " + describe(*v),
                      "invalid_type");
  }
  return v;
}

}  // namespace keel::server
