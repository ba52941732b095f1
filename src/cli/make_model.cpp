// keel make-model — writes a GGUF with seeded random weights at a preset's shapes (see
// model/synthetic.h), for tests and benchmarks without downloads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "core/error.h"
#include "model/synthetic.h"

namespace keel::cli {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : "|") + s;
  return out;
}

int run_make_model(const std::string& output, const model::SyntheticOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const model::SyntheticSummary s = model::write_synthetic_model(output, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %s\n  %lld tensors, %.1fM parameters, vocab %lld, %.1f MiB of weights, %.1f s\n",
              output.c_str(), s.name.c_str(), static_cast<long long>(s.n_tensors), s.n_params / 1e6,
              static_cast<long long>(s.n_vocab), static_cast<double>(s.weight_bytes) / (1024.0 * 1024.0),
              seconds);
  return 0;
}

// Shape overrides: 0 (the default) keeps the preset's value.
void add_overrides(CLI::App& app, model::SyntheticShape& o) {
  struct Flag {
    const char* name;
    int64_t* value;
    const char* help;
  };
  const Flag flags[] = {
      {"--layers", &o.n_layer, "Number of layers"},
      {"--embd", &o.n_embd, "Embedding width"},
      {"--heads", &o.n_head, "Query heads"},
      {"--kv-heads", &o.n_head_kv, "Key/value heads (must divide --heads)"},
      {"--head-dim", &o.head_dim, "Head width (key_length/value_length)"},
      {"--ff", &o.n_ff, "Feed-forward width (each expert's for MoE architectures)"},
      {"--vocab-size", &o.n_vocab, "Pad the built-in vocabulary to this many tokens"},
      {"--ctx", &o.n_ctx, "Training context length (context_length)"},
      {"--sliding-window", &o.sliding_window, "Sliding window of the local layers (gemma2/gemma3/gpt-oss)"},
      {"--rope-dims", &o.n_rot, "Rotary dimensions (rope.dimension_count); below head_dim = partial rotary"},
      {"--experts", &o.n_expert, "Experts per layer (gpt-oss)"},
      {"--experts-used", &o.n_expert_used, "Experts used per token (gpt-oss)"},
  };
  for (const Flag& f : flags) {
    app.add_option(f.name, *f.value, std::string(f.help) + " (default: the preset's)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  }
}

std::string all_presets() {
  std::vector<std::string> names;
  for (const std::string& arch : model::synthetic_arches()) {
    for (const std::string& p : model::synthetic_presets(arch)) {
      if (std::find(names.begin(), names.end(), p) == names.end()) names.push_back(p);
    }
  }
  return joined(names);
}

CommandRegistrar reg("make-model", "Write a GGUF model with seeded random weights", [](CLI::App& app) {
  auto output = std::make_shared<std::string>();
  auto o = std::make_shared<model::SyntheticOptions>();
  app.add_option("-o,--output", *output, "GGUF file to write")->required();
  app.add_option("--arch", o->arch, "Architecture (" + joined(model::synthetic_arches()) + ")")
      ->check(CLI::IsMember(model::synthetic_arches()))
      ->capture_default_str();
  app.add_option("--preset", o->preset, "Shape preset (" + all_presets() + "; 1b for llama only)")
      ->capture_default_str();
  app.add_option("--type", o->weight_type,
                 "Weight type (" + joined(model::synthetic_weight_types()) + "; mxfp4: MoE experts)")
      ->check(CLI::IsMember(model::synthetic_weight_types()))
      ->capture_default_str();
  app.add_option("--vocab", o->vocab_path, "Copy the tokenizer from this GGUF (default: built-in byte-level BPE)")
      ->check(CLI::ExistingFile);
  add_overrides(app, o->overrides);
  app.add_option("--seed", o->seed, "Random seed")->capture_default_str();
  app.add_option("-t,--threads", o->n_threads, "Threads (default: all)")->check(CLI::Range(0, 1024));
  // Presets and overrides depend on the architecture, so they are checked after parsing.
  app.callback([o] {
    const auto presets = model::synthetic_presets(o->arch);
    if (std::find(presets.begin(), presets.end(), o->preset) == presets.end()) {
      throw CLI::ValidationError("--preset", "'" + o->preset + "' is not a preset of " + o->arch + " (" +
                                                 joined(presets) + ")");
    }
    try {
      model::synthetic_shape(*o);
    } catch (const Error& e) {
      throw CLI::ValidationError(e.what());
    }
  });
  return [output, o] { return run_make_model(*output, *o); };
});

}  // namespace
}  // namespace keel::cli
