// Option resolution for synthetic models: the names of the tables' rows, and a preset with
// its overrides applied and validated (synthetic_shape). See synthetic.h.
#include <string>

#include "core/error.h"
#include "model/synthetic.h"
#include "model/synthetic_tables.h"
#include "model/synthetic_vocab.h"

namespace keel::model {
namespace {

using synthetic::ArchSpec;

[[noreturn]] void reject(const std::string& option, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "make-model: " + option + ": " + why);
}

// An override (0 = keep `preset`) within [1, max].
int64_t apply(const std::string& option, int64_t preset, int64_t override, int64_t max) {
  if (override < 0) reject(option, "must be positive, got " + std::to_string(override));
  const int64_t v = override > 0 ? override : preset;
  if (v > max) reject(option, std::to_string(v) + " exceeds the limit " + std::to_string(max));
  return v;
}

void require_feature(const std::string& option, int64_t override, bool has, const ArchSpec& arch,
                     const std::string& feature) {
  if (override != 0 && !has) {
    reject(option, std::string("architecture '") + arch.name + "' has no " + feature);
  }
}

}  // namespace

std::vector<std::string> synthetic_arches() {
  std::vector<std::string> out;
  for (const ArchSpec& a : synthetic::arch_table()) out.emplace_back(a.name);
  return out;
}

std::vector<std::string> synthetic_presets(const std::string& arch) {
  std::vector<std::string> out;
  for (const synthetic::Preset& p : synthetic::preset_table()) {
    if (arch == p.arch) out.emplace_back(p.name);
  }
  return out;
}

std::vector<std::string> synthetic_weight_types() {
  std::vector<std::string> out;
  for (const synthetic::WeightType& w : synthetic::weight_types()) out.emplace_back(w.name);
  return out;
}

SyntheticShape synthetic_shape(const SyntheticOptions& options) {
  const ArchSpec& arch = synthetic::find_arch(options.arch);
  const SyntheticShape& p = synthetic::find_preset(options.arch, options.preset).shape;
  const synthetic::WeightType& w = synthetic::find_weight_type(options.weight_type);
  const SyntheticShape& o = options.overrides;
  const bool moe = arch.has_experts();
  const bool sliding = arch.sliding != synthetic::Sliding::kNone;
  if (w.experts != w.base && !moe) {
    reject("--type " + options.weight_type,
           std::string("applies to expert tensors; architecture '") + arch.name + "' has none");
  }
  require_feature("--sliding-window", o.sliding_window, sliding, arch, "sliding-window layers");
  require_feature("--experts", o.n_expert, moe, arch, "experts");
  require_feature("--experts-used", o.n_expert_used, moe, arch, "experts");

  // Limits keep every size a u32 in the file and every row allocation modest.
  constexpr int64_t kMaxWidth = 1 << 16, kMaxCount = 1 << 12;
  SyntheticShape s;
  s.n_layer = apply("--layers", p.n_layer, o.n_layer, kMaxCount);
  s.n_embd = apply("--embd", p.n_embd, o.n_embd, kMaxWidth);
  s.n_head = apply("--heads", p.n_head, o.n_head, kMaxCount);
  s.n_head_kv = apply("--kv-heads", p.n_head_kv, o.n_head_kv, kMaxCount);
  if (s.n_head % s.n_head_kv != 0) {
    reject("--kv-heads", std::to_string(s.n_head_kv) + " does not divide the " +
                             std::to_string(s.n_head) + " query heads");
  }
  const int64_t default_head_dim = p.head_dim > 0 ? p.head_dim : s.n_embd / s.n_head;
  s.head_dim = apply("--head-dim", default_head_dim, o.head_dim, kMaxWidth);
  if (s.head_dim <= 0) reject("--heads", std::to_string(s.n_head) + " heads leave no room in n_embd");
  s.n_ff = apply("--ff", p.n_ff, o.n_ff, kMaxWidth);
  s.n_ctx = apply("--ctx", p.n_ctx, o.n_ctx, int64_t{1} << 24);
  s.n_rot = apply("--rope-dims", s.head_dim, o.n_rot, kMaxWidth);
  if (s.n_rot % 2 != 0 || s.n_rot > s.head_dim) {
    reject("--rope-dims", std::to_string(s.n_rot) + " must be even and at most head_dim " +
                              std::to_string(s.head_dim));
  }
  s.sliding_window = sliding ? apply("--sliding-window", p.sliding_window, o.sliding_window, s.n_ctx) : 0;
  if (moe) {
    s.n_expert = apply("--experts", p.n_expert, o.n_expert, 256);
    s.n_expert_used = apply("--experts-used", p.n_expert_used, o.n_expert_used, s.n_expert);
  }
  s.n_vocab = p.n_vocab;
  if (o.n_vocab != 0) {
    if (!options.vocab_path.empty()) reject("--vocab-size", "cannot pad a vocabulary copied with --vocab");
    s.n_vocab = apply("--vocab-size", p.n_vocab, o.n_vocab, int64_t{1} << 22);
    if (s.n_vocab < synthetic::builtin_vocab_size()) {
      reject("--vocab-size", std::to_string(s.n_vocab) + " is smaller than the built-in vocabulary (" +
                                 std::to_string(synthetic::builtin_vocab_size()) + " tokens)");
    }
  }
  return s;
}

}  // namespace keel::model
