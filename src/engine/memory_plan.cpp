#include "engine/memory_plan.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace keel::engine {
namespace {

uint64_t total_of(const MemoryPlanInputs& in, const MemoryConfig& c) {
  return in.weights_bytes + in.kv_bytes(c) + in.workspace_bytes(c);
}

bool quantized_kv(const MemoryConfig& c) {
  auto small = [](tensor::DType t) {
    return t == tensor::DType::kQ8_0 || t == tensor::DType::kQ4_0 || t == tensor::DType::kQ4_1 ||
           t == tensor::DType::kQ5_0 || t == tensor::DType::kQ5_1;
  };
  return small(c.k_type) && small(c.v_type);
}

// Largest context (a multiple of 256, at least 256, below `from`) whose plan fits, or 0.
int32_t largest_fitting_ctx(const MemoryPlanInputs& in, MemoryConfig c, int32_t from) {
  int32_t lo = 0, hi = (from - 1) / 256;  // in units of 256; the KV pool grows with ctx
  while (lo < hi) {
    int32_t mid = (lo + hi + 1) / 2;
    c.n_ctx = mid * 256;
    bool fits = false;
    try {
      fits = total_of(in, c) <= in.limit_bytes;
    } catch (const Error&) {
      return 0;  // this configuration is not usable at any context
    }
    if (fits) lo = mid;
    else hi = mid - 1;
  }
  return lo * 256;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string config_json(const MemoryConfig& c) {
  std::ostringstream o;
  o << "{\"ctx\": " << c.n_ctx << ", \"parallel\": " << c.n_parallel << ", \"batch\": " << c.batch_tokens
    << ", \"cache_type_k\": \"" << tensor::dtype_name(c.k_type) << "\", \"cache_type_v\": \""
    << tensor::dtype_name(c.v_type) << "\"}";
  return o.str();
}

}  // namespace

MemoryPlan plan_memory(const MemoryPlanInputs& inputs) {
  if (!inputs.kv_bytes || !inputs.workspace_bytes) {
    throw Error(ErrorCode::kInvalidArgument, "memory plan: kv_bytes and workspace_bytes are required");
  }
  MemoryPlanInputs in = inputs;
  if (in.limit_bytes == 0) {
    in.limit_bytes = available_memory_bytes();
    in.limit_source = "available memory (MemAvailable in /proc/meminfo)";
  }
  MemoryPlan p;
  p.model = in.model;
  p.config = in.config;
  p.weights_bytes = in.weights_bytes;
  p.kv_bytes = in.kv_bytes(in.config);
  p.workspace_bytes = in.workspace_bytes(in.config);
  p.total_bytes = p.weights_bytes + p.kv_bytes + p.workspace_bytes;
  p.limit_bytes = in.limit_bytes;
  p.limit_source = in.limit_source;
  p.fits = p.total_bytes <= p.limit_bytes;
  if (p.fits) return p;

  // An alternative the model cannot use (e.g. q8_0 K with a head size that is not a
  // multiple of 32) makes the accounting throw: it is simply not offered.
  auto fits_with = [&](const MemoryConfig& c) {
    try {
      return total_of(in, c) <= in.limit_bytes;
    } catch (const Error&) {
      return false;
    }
  };
  auto consider = [&](const std::string& flags, const MemoryConfig& c) {
    if (fits_with(c)) p.alternatives.push_back({flags, c, total_of(in, c)});
  };
  const MemoryConfig& base = in.config;
  MemoryConfig q8 = base;
  q8.k_type = q8.v_type = tensor::DType::kQ8_0;
  if (!quantized_kv(base)) consider("-ctk q8_0 -ctv q8_0", q8);
  if (int32_t ctx = largest_fitting_ctx(in, base, base.n_ctx); ctx > 0) {
    MemoryConfig c = base;
    c.n_ctx = ctx;
    consider("--ctx " + std::to_string(ctx), c);
  }
  for (int32_t n = base.n_parallel - 1; n >= 1; --n) {
    MemoryConfig c = base;
    c.n_parallel = n;
    if (fits_with(c)) {
      consider("--parallel " + std::to_string(n), c);
      break;
    }
  }
  if (!quantized_kv(base) && !fits_with(q8)) {
    if (int32_t ctx = largest_fitting_ctx(in, q8, base.n_ctx); ctx > 0) {
      MemoryConfig c = q8;
      c.n_ctx = ctx;
      consider("-ctk q8_0 -ctv q8_0 --ctx " + std::to_string(ctx), c);
    }
  }
  return p;
}

std::string MemoryPlan::to_text() const {
  std::ostringstream o;
  o << "memory plan for " << (model.empty() ? std::string("the model") : model) << " (ctx " << config.n_ctx
    << " x " << config.n_parallel << " slots, batch " << config.batch_tokens << ", KV "
    << tensor::dtype_name(config.k_type) << "/" << tensor::dtype_name(config.v_type) << "):\n"
    << "  weights    " << format_bytes(weights_bytes) << "\n"
    << "  KV cache   " << format_bytes(kv_bytes) << "\n"
    << "  workspace  " << format_bytes(workspace_bytes) << "\n"
    << "  total      " << format_bytes(total_bytes) << "\n"
    << "  limit      " << format_bytes(limit_bytes) << " (" << limit_source << ")\n"
    << "  " << (fits ? "fits" : "DOES NOT FIT") << "\n";
  if (!fits) {
    if (alternatives.empty()) {
      o << "  no smaller configuration fits: weights + workspace alone need "
        << format_bytes(weights_bytes + workspace_bytes) << "\n";
    } else {
      o << "  options that fit:\n";
      for (const Alternative& a : alternatives) o << "    " << a.flags << "  (total " << format_bytes(a.total_bytes) << ")\n";
    }
  }
  return o.str();
}

std::string MemoryPlan::to_json() const {
  std::ostringstream o;
  o << "{\"model\": \"" << json_escape(model) << "\", \"config\": " << config_json(config)
    << ", \"weights_bytes\": " << weights_bytes << ", \"kv_bytes\": " << kv_bytes
    << ", \"workspace_bytes\": " << workspace_bytes << ", \"total_bytes\": " << total_bytes
    << ", \"limit_bytes\": " << limit_bytes << ", \"limit_source\": \"" << json_escape(limit_source)
    << "\", \"fits\": " << (fits ? "true" : "false") << ", \"alternatives\": [";
  for (size_t i = 0; i < alternatives.size(); ++i) {
    const Alternative& a = alternatives[i];
    o << (i ? ", " : "") << "{\"flags\": \"" << json_escape(a.flags) << "\", \"config\": " << config_json(a.config)
      << ", \"total_bytes\": " << a.total_bytes << "}";
  }
  o << "]}";
  return o.str();
}

void require_fits(const MemoryPlan& plan) {
  if (plan.fits) return;
  std::string msg = "not enough memory: " + format_bytes(plan.total_bytes) + " needed (weights " +
                    format_bytes(plan.weights_bytes) + " + KV cache " + format_bytes(plan.kv_bytes) +
                    " + workspace " + format_bytes(plan.workspace_bytes) + "), limit " +
                    format_bytes(plan.limit_bytes) + " (" + plan.limit_source + ")";
  if (plan.alternatives.empty()) {
    msg += "; no smaller KV type, context or slot count fits: the weights and workspace alone need " +
           format_bytes(plan.weights_bytes + plan.workspace_bytes);
  } else {
    msg += "; options that fit:";
    for (size_t i = 0; i < plan.alternatives.size(); ++i) {
      msg += (i ? "; " : " ") + plan.alternatives[i].flags + " (" + format_bytes(plan.alternatives[i].total_bytes) + ")";
    }
  }
  throw Error(ErrorCode::kOutOfMemory, msg);
}

uint64_t parse_meminfo_available(std::string_view meminfo) {
  const std::string_view key = "MemAvailable:";
  size_t at = meminfo.find(key);
  if (at == std::string_view::npos) {
    throw Error(ErrorCode::kInvalidArgument, "/proc/meminfo: no MemAvailable line");
  }
  std::string rest(meminfo.substr(at + key.size(), 64));
  std::istringstream in(rest);
  uint64_t kb = 0;
  std::string unit;
  if (!(in >> kb >> unit) || unit != "kB") {
    throw Error(ErrorCode::kInvalidArgument, "/proc/meminfo: cannot read the MemAvailable line");
  }
  return kb * 1024;
}

uint64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  if (!f) throw Error(ErrorCode::kIo, "/proc/meminfo: cannot open (set --mem-limit instead)");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_meminfo_available(ss.str());
}

uint64_t parse_byte_size(std::string_view text) {
  auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument,
                 "memory size '" + std::string(text) + "': expected a number with an optional unit K, M, G or T (e.g. 8G)");
  };
  std::string s(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) throw bad();
  const std::string number = s.substr(0, i);  // strtod's end pointer points into it
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(value) || value <= 0) throw bad();
  std::string unit = s.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB") unit.resize(unit.size() - 2);
  else if (unit.size() >= 1 && unit.back() == 'B') unit.pop_back();
  double mult = 1;
  if (unit == "K") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) throw bad();
  double bytes = value * mult;
  if (bytes >= 1.8e19) throw bad();
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

}  // namespace keel::engine
