#include "sweep/sweep_config.h"

#include <charconv>

#include "core/error.h"

namespace keel::sweep {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(sep, begin);
    std::string_view part = text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    parts.push_back(part);
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

Error bad(std::string_view flag, std::string_view text, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument, std::string(flag) + ": '" + std::string(text) + "': " + why);
}

bool parse_on_off(std::string_view v, std::string_view flag) {
  if (v == "on" || v == "1" || v == "true") return true;
  if (v == "off" || v == "0" || v == "false") return false;
  throw bad(flag, v, "expected on or off");
}

tensor::DType parse_type(std::string_view v, std::string_view flag) {
  const auto t = tensor::dtype_from_name(v);
  if (!t) throw bad(flag, v, "unknown KV cache type");
  return *t;
}

int32_t parse_size(std::string_view v, std::string_view flag) {
  int64_t scale = 1;
  std::string_view digits = v;
  if (!digits.empty() && (digits.back() == 'k' || digits.back() == 'K')) {
    scale = 1024;
    digits.remove_suffix(1);
  }
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || n <= 0 ||
      n * scale > (int64_t{1} << 30)) {
    throw bad(flag, v, "expected a positive integer (optionally with k = x1024)");
  }
  return static_cast<int32_t>(n * scale);
}

template <typename T, typename Fn>
std::vector<T> parse_list(std::string_view text, std::string_view flag, Fn&& one) {
  std::vector<T> out;
  for (std::string_view part : split(text, ',')) {
    if (part.empty()) throw bad(flag, text, "empty item in the list");
    out.push_back(one(part, flag));
  }
  return out;
}

}  // namespace

std::string SweepConfig::label() const {
  return std::string("fa=") + (flash_attention ? "on" : "off") + ",ctk=" + tensor::dtype_name(k_type) +
         ",ctv=" + tensor::dtype_name(v_type) + ",c=" + std::to_string(n_ctx) + ",np=" + std::to_string(n_parallel);
}

std::vector<bool> parse_on_off_list(std::string_view text, std::string_view flag) {
  return parse_list<bool>(text, flag, parse_on_off);
}

std::vector<tensor::DType> parse_type_list(std::string_view text, std::string_view flag) {
  return parse_list<tensor::DType>(text, flag, parse_type);
}

std::vector<int32_t> parse_int_list(std::string_view text, std::string_view flag) {
  return parse_list<int32_t>(text, flag, parse_size);
}

std::vector<SweepConfig> expand(const SweepAxes& a) {
  if (a.flash_attention.empty() || a.k_types.empty() || a.contexts.empty() || a.parallel.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "sweep: every axis needs at least one value");
  }
  std::vector<SweepConfig> rows;
  for (bool fa : a.flash_attention) {
    for (tensor::DType k : a.k_types) {
      const std::vector<tensor::DType> vs = a.v_types.empty() ? std::vector<tensor::DType>{k} : a.v_types;
      for (tensor::DType v : vs) {
        for (int32_t c : a.contexts) {
          for (int32_t np : a.parallel) rows.push_back({fa, k, v, c, np});
        }
      }
    }
  }
  return rows;
}

std::vector<SweepConfig> parse_configs(std::string_view text, const SweepConfig& defaults) {
  std::vector<SweepConfig> rows;
  for (std::string_view row_text : split(text, ';')) {
    if (row_text.empty()) continue;  // a trailing ';'
    SweepConfig row = defaults;
    bool v_given = false;
    for (std::string_view item : split(row_text, ',')) {
      const size_t eq = item.find('=');
      if (eq == std::string_view::npos) throw bad("--configs", item, "expected key=value");
      const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
      if (key == "fa") {
        row.flash_attention = parse_on_off(value, "--configs fa");
      } else if (key == "ctk") {
        row.k_type = parse_type(value, "--configs ctk");
      } else if (key == "ctv") {
        row.v_type = parse_type(value, "--configs ctv");
        v_given = true;
      } else if (key == "c" || key == "ctx") {
        row.n_ctx = parse_size(value, "--configs c");
      } else if (key == "np" || key == "parallel") {
        row.n_parallel = parse_size(value, "--configs np");
      } else {
        throw bad("--configs", item, "unknown key (fa, ctk, ctv, c, np)");
      }
    }
    if (!v_given) row.v_type = row.k_type;
    rows.push_back(row);
  }
  if (rows.empty()) throw bad("--configs", text, "no configuration");
  return rows;
}

}  // namespace keel::sweep
