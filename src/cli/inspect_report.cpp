#include "cli/inspect_report.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace keel::cli {
namespace {

using gguf::GgufFile;
using gguf::Value;

constexpr int64_t kUnsetId = 0xFFFFFFFF;  // how converters write "no such token"

// Special tokens: role and the key suffixes converters use for it ("seperator" is a real
// misspelling found in files). The first four are always listed, set or not.
struct SpecialKey {
  const char* role;
  const char* keys[2];
};
constexpr SpecialKey kSpecialKeys[] = {
    {"bos", {"bos_token_id", nullptr}},       {"eos", {"eos_token_id", nullptr}},
    {"unk", {"unknown_token_id", nullptr}},   {"pad", {"padding_token_id", nullptr}},
    {"sep", {"separator_token_id", "seperator_token_id"}},
    {"cls", {"cls_token_id", nullptr}},       {"mask", {"mask_token_id", nullptr}},
    {"eot", {"eot_token_id", nullptr}},       {"eom", {"eom_token_id", nullptr}},
};
constexpr int kAlwaysListed = 4;

std::optional<int64_t> int_value(const Value* v) {
  if (!v) return std::nullopt;
  try {
    if (v->is_array()) {  // per-layer values (e.g. head_count_kv): the largest
      auto all = v->as_int_array();
      if (all.empty()) return std::nullopt;
      return *std::max_element(all.begin(), all.end());
    }
    return v->as_int();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// KV layout from metadata alone: every layer full attention (an upper bound for models
// with sliding-window layers). Throws keel::Error naming what is missing.
kv::KvLayout layout_from_metadata(const GgufFile& f, const std::string& arch) {
  auto need = [&](const std::string& suffix) {
    auto v = int_value(f.find(arch + "." + suffix));
    if (!v || *v <= 0) throw Error(ErrorCode::kNotFound, "no positive " + arch + "." + suffix);
    return *v;
  };
  const int64_t n_layers = need("block_count");
  const int64_t n_head = need("attention.head_count");
  const int64_t n_embd = need("embedding_length");
  if (n_layers > (1 << 20)) throw Error(ErrorCode::kInvalidFile, arch + ".block_count is implausible");
  kv::KvLayout layout;
  layout.layer_window.assign(static_cast<size_t>(n_layers), 0);
  layout.n_kv_heads = int_value(f.find(arch + ".attention.head_count_kv")).value_or(n_head);
  layout.head_dim_k = int_value(f.find(arch + ".attention.key_length")).value_or(n_embd / n_head);
  layout.head_dim_v = int_value(f.find(arch + ".attention.value_length")).value_or(n_embd / n_head);
  return layout;
}

// The exact layout (per-layer sliding windows) when keel's model code supports the file;
// otherwise the metadata upper bound.
kv::KvLayout kv_layout(const GgufFile& f, const std::string& arch, std::string* source) {
  try {
    // Model binds weights through its own GgufFile; the mapping is shared by the OS.
    model::Model m(f.path());
    *source = "model";
    return m.kv_layout();
  } catch (const Error&) {
    *source = "metadata (every layer full attention)";
    return layout_from_metadata(f, arch);
  }
}

MemoryEstimate estimate_memory(const GgufFile& f, const std::string& arch, const MemoryOptions& o,
                               uint64_t weight_bytes) {
  MemoryEstimate m;
  try {
    if (arch.empty()) throw Error(ErrorCode::kNotFound, "no general.architecture");
    kv::KvLayout layout = kv_layout(f, arch, &m.layout_source);
    m.n_layers = layout.n_layers();
    m.n_sliding_layers = std::count_if(layout.layer_window.begin(), layout.layer_window.end(),
                                       [](int32_t w) { return w > 0; });
    m.n_kv_heads = layout.n_kv_heads;
    m.head_dim_k = layout.head_dim_k;
    m.head_dim_v = layout.head_dim_v;
    kv::KvOptions ko;
    ko.k_type = o.k_type;
    ko.v_type = o.v_type;
    ko.max_tokens = o.n_ctx * o.n_parallel;
    ko.max_sequences = o.n_parallel;
    kv::KvMemoryPlan plan = kv::KvCache::plan(layout, ko);
    m.kv_bytes_per_token = kv::KvCache::bytes_per_token(layout, o.k_type, o.v_type);
    m.kv_bytes = plan.pool_bytes;
    m.total_bytes = weight_bytes + m.kv_bytes;
  } catch (const Error& e) {
    m.error = e.what();
  }
  return m;
}

}  // namespace

InspectReport build_inspect_report(const GgufFile& f, const MemoryOptions& options) {
  InspectReport r;
  r.memory_options = options;
  if (const Value* a = f.find("general.architecture"); a && a->type == gguf::ValueType::kString)
    r.architecture = a->as_string();

  std::set<std::string> shown = {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens"};
  const Value* tokens = f.find("tokenizer.ggml.tokens");
  const std::vector<std::string>* vocab = nullptr;
  if (tokens && tokens->is_array() && tokens->array_type == gguf::ValueType::kString)
    vocab = &tokens->as_array<std::string>();
  r.vocab_size = vocab ? static_cast<int64_t>(vocab->size()) : 0;
  auto string_of = [&](const char* key) {
    const Value* v = f.find(key);
    return v && v->type == gguf::ValueType::kString ? v->as_string() : std::string();
  };
  r.tokenizer_model = string_of("tokenizer.ggml.model");
  r.tokenizer_pre = string_of("tokenizer.ggml.pre");
  for (int i = 0; i < static_cast<int>(std::size(kSpecialKeys)); ++i) {
    const SpecialKey& sk = kSpecialKeys[i];
    const Value* v = nullptr;
    for (const char* suffix : sk.keys) {
      if (!suffix || v) continue;
      const std::string key = std::string("tokenizer.ggml.") + suffix;
      v = f.find(key);
      if (v) shown.insert(key);
    }
    if (!v && i >= kAlwaysListed) continue;
    SpecialToken t{sk.role, std::nullopt, std::nullopt};
    if (auto id = int_value(v); id && *id != kUnsetId && *id >= 0) {
      t.id = id;
      if (vocab && *id < r.vocab_size) t.text = (*vocab)[static_cast<size_t>(*id)];
    }
    r.special_tokens.push_back(std::move(t));
  }

  const std::string prefix = r.architecture.empty() ? std::string("\x01") : r.architecture + ".";
  for (const auto& [key, value] : f.metadata()) {
    if (key.compare(0, prefix.size(), prefix) == 0) r.hparams.emplace_back(key.substr(prefix.size()), &value);
    else if (!shown.count(key)) r.other.emplace_back(key, &value);
  }
  for (const auto& t : f.tensors()) r.weight_bytes += t.n_bytes;
  r.memory = estimate_memory(f, r.architecture, options, r.weight_bytes);
  return r;
}

}  // namespace keel::cli
