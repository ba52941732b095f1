// keel inspect FILE [--json] — what a GGUF file holds: architecture, hyper-parameters,
// tokenizer summary, other metadata (long arrays summarized), the tensor table, total
// weight bytes, and the memory weights + KV cache need for a given context and slots.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "cli/inspect_report.h"
#include "core/error.h"
#include "gguf/gguf.h"
#include "tensor/types.h"

namespace keel::cli {
namespace {

using gguf::Value;
using json = nlohmann::ordered_json;  // keeps file order

struct InspectOptions {
  std::string path;
  bool json = false;
  int64_t n_ctx = 4096;
  int32_t n_parallel = 1;
  std::string kv_type_k = "f16";
  std::string kv_type_v = "f16";
};

constexpr size_t kMaxItems = 8;         // array items shown
constexpr size_t kMaxStringBytes = 120;  // longer strings are cut (chat templates)

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string display(const Value& v) {
  if (v.type == gguf::ValueType::kString && v.as_string().size() > kMaxStringBytes) {
    Value cut = Value::str(v.as_string().substr(0, kMaxStringBytes));
    std::string s = cut.to_string();
    return s.substr(0, s.size() - 1) + "...\" (" + std::to_string(v.as_string().size()) + " bytes)";
  }
  std::string s = v.to_string(kMaxItems);
  if (v.is_array()) s = std::string("array of ") + gguf::value_type_name(v.array_type) + " " + s;
  return s;
}

// Values as JSON: scalars as themselves, short arrays whole, long arrays summarized.
json to_json(const Value& v) {
  if (v.is_array()) {
    const size_t n = v.array_size();
    json items = json::array();
    for (size_t i = 0; i < n && i < kMaxItems * 2; ++i) {
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::shared_ptr<gguf::Array>>) items.push_back(to_json((*x)[i]));
            else if constexpr (requires { x.size(); } && !std::is_same_v<T, std::string>) items.push_back(x[i]);
          },
          v.data);
    }
    if (n <= kMaxItems * 2) return items;
    return {{"type", std::string("array of ") + gguf::value_type_name(v.array_type)}, {"count", n}, {"head", items}};
  }
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) return x;
        else return nullptr;
      },
      v.data);
}

std::optional<tensor::DType> cache_type(const std::string& name) { return tensor::dtype_from_name(name); }

json report_json(const gguf::GgufFile& f, const InspectReport& r) {
  json j;
  j["file"] = f.path();
  j["version"] = f.version();
  j["file_bytes"] = f.file_size();
  j["alignment"] = f.alignment();
  j["architecture"] = r.architecture;
  json hp = json::object();
  for (const auto& [k, v] : r.hparams) hp[k] = to_json(*v);
  j["hparams"] = hp;
  json tok = {{"model", r.tokenizer_model}, {"pre", r.tokenizer_pre}, {"vocab_size", r.vocab_size}};
  for (const auto& t : r.special_tokens) {
    tok[t.role + "_id"] = t.id ? json(*t.id) : json(nullptr);
    tok[t.role + "_text"] = t.text ? json(*t.text) : json(nullptr);
  }
  j["tokenizer"] = tok;
  json other = json::object();
  for (const auto& [k, v] : r.other) other[k] = to_json(*v);
  j["metadata"] = other;
  json tensors = json::array();
  for (const auto& t : f.tensors())
    tensors.push_back({{"name", t.name}, {"type", tensor::dtype_name(t.type)}, {"shape", t.shape},
                       {"bytes", t.n_bytes}, {"offset", f.data_offset() + t.offset}});
  j["tensors"] = tensors;
  j["weight_bytes"] = r.weight_bytes;
  const MemoryEstimate& m = r.memory;
  json mem = {{"ctx", r.memory_options.n_ctx}, {"parallel", r.memory_options.n_parallel},
              {"kv_type_k", tensor::dtype_name(r.memory_options.k_type)},
              {"kv_type_v", tensor::dtype_name(r.memory_options.v_type)}, {"weight_bytes", r.weight_bytes}};
  if (!m.error.empty()) {
    mem["error"] = m.error;
  } else {
    mem.update({{"layout_source", m.layout_source}, {"n_layers", m.n_layers}, {"n_sliding_layers", m.n_sliding_layers},
                {"n_kv_heads", m.n_kv_heads}, {"head_dim_k", m.head_dim_k}, {"head_dim_v", m.head_dim_v},
                {"kv_bytes_per_token", m.kv_bytes_per_token}, {"kv_bytes", m.kv_bytes}, {"total_bytes", m.total_bytes}});
  }
  j["memory"] = mem;
  return j;
}

void print_text(const gguf::GgufFile& f, const InspectReport& r) {
  std::printf("%s: GGUF v%u, %llu bytes, alignment %llu, %zu metadata keys, %zu tensors\n", f.path().c_str(),
              f.version(), static_cast<unsigned long long>(f.file_size()),
              static_cast<unsigned long long>(f.alignment()), f.metadata().size(), f.tensors().size());
  std::printf("\narchitecture: %s\n", r.architecture.empty() ? "(none)" : r.architecture.c_str());
  if (!r.hparams.empty()) std::printf("hyper-parameters:\n");
  for (const auto& [k, v] : r.hparams) std::printf("  %-40s %s\n", k.c_str(), display(*v).c_str());

  std::printf("\ntokenizer: model %s, pre %s, %lld tokens\n", r.tokenizer_model.empty() ? "(none)" : r.tokenizer_model.c_str(),
              r.tokenizer_pre.empty() ? "(none)" : r.tokenizer_pre.c_str(), static_cast<long long>(r.vocab_size));
  for (const auto& t : r.special_tokens) {
    std::string text = t.text ? Value::str(*t.text).to_string() : std::string();
    if (t.id) std::printf("  %-5s %lld %s\n", t.role.c_str(), static_cast<long long>(*t.id), text.c_str());
    else std::printf("  %-5s unset\n", t.role.c_str());
  }

  if (!r.other.empty()) std::printf("\nother metadata:\n");
  for (const auto& [k, v] : r.other) std::printf("  %-40s %s\n", k.c_str(), display(*v).c_str());

  std::printf("\ntensors (%zu):\n", f.tensors().size());
  if (!f.tensors().empty()) std::printf("  %-40s %-6s %-24s %12s\n", "name", "type", "shape", "bytes");
  for (const auto& t : f.tensors())
    std::printf("  %-40s %-6s %-24s %12llu\n", t.name.c_str(), tensor::dtype_name(t.type), shape_text(t.shape).c_str(),
                static_cast<unsigned long long>(t.n_bytes));
  std::printf("total weight bytes: %llu (%s)\n", static_cast<unsigned long long>(r.weight_bytes), mib(r.weight_bytes).c_str());

  const MemoryOptions& o = r.memory_options;
  const MemoryEstimate& m = r.memory;
  std::printf("\nmemory for --ctx %lld --parallel %d, K %s, V %s:\n", static_cast<long long>(o.n_ctx), o.n_parallel,
              tensor::dtype_name(o.k_type), tensor::dtype_name(o.v_type));
  if (!m.error.empty()) {
    std::printf("  not available: %s\n", m.error.c_str());
    return;
  }
  std::printf("  weights   %14llu (%s)\n", static_cast<unsigned long long>(r.weight_bytes), mib(r.weight_bytes).c_str());
  std::printf("  kv cache  %14llu (%s); %llu bytes per token; %lld layers (%lld sliding), %lld kv heads, head dims %lld/%lld; layout from %s\n",
              static_cast<unsigned long long>(m.kv_bytes), mib(m.kv_bytes).c_str(),
              static_cast<unsigned long long>(m.kv_bytes_per_token), static_cast<long long>(m.n_layers),
              static_cast<long long>(m.n_sliding_layers), static_cast<long long>(m.n_kv_heads),
              static_cast<long long>(m.head_dim_k), static_cast<long long>(m.head_dim_v), m.layout_source.c_str());
  std::printf("  total     %14llu (%s)\n", static_cast<unsigned long long>(m.total_bytes), mib(m.total_bytes).c_str());
}

int run_inspect(const InspectOptions& o) {
  gguf::GgufFile f(o.path);
  MemoryOptions mo;
  mo.n_ctx = o.n_ctx;
  mo.n_parallel = o.n_parallel;
  mo.k_type = *cache_type(o.kv_type_k);  // validated by the option's check
  mo.v_type = *cache_type(o.kv_type_v);
  InspectReport r = build_inspect_report(f, mo);
  if (o.json) {
    // Token texts need not be valid UTF-8: replace, never throw.
    std::printf("%s\n", report_json(f, r).dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    print_text(f, r);
  }
  return 0;
}

const CLI::Validator kCacheType(
    [](std::string& s) -> std::string {
      static const char* const ok[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1"};
      auto t = cache_type(s);
      for (const char* name : ok)
        if (t && *t == *tensor::dtype_from_name(name)) return "";
      return "'" + s + "' is not a KV cache type (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1)";
    },
    "KV_TYPE");

CommandRegistrar reg("inspect", "Print a GGUF file's metadata, tensors and memory needs", [](CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  app.add_option("file", o->path, "GGUF file")->required();
  app.add_flag("--json", o->json, "Print one JSON object");
  app.add_option("--ctx", o->n_ctx, "Context length for the memory estimate")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_option("--parallel", o->n_parallel, "Parallel sequences (slots) for the memory estimate")
      ->check(CLI::Range(1, 4096));
  app.add_option("--kv-type-k", o->kv_type_k, "K cache type")->check(kCacheType);
  app.add_option("--kv-type-v", o->kv_type_v, "V cache type")->check(kCacheType);
  return [o] { return run_inspect(*o); };
});

}  // namespace
}  // namespace keel::cli
