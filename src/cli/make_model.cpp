// keel make-model — writes a GGUF with seeded random weights at a preset's shapes (see
// model/synthetic.h), for tests and benchmarks without downloads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
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

CommandRegistrar reg("make-model", "Write a GGUF model with seeded random weights", [](CLI::App& app) {
  auto output = std::make_shared<std::string>();
  auto o = std::make_shared<model::SyntheticOptions>();
  app.add_option("-o,--output", *output, "GGUF file to write")->required();
  app.add_option("--arch", o->arch, "Architecture (" + joined(model::synthetic_arches()) + ")")
      ->check(CLI::IsMember(model::synthetic_arches()))
      ->capture_default_str();
  app.add_option("--preset", o->preset, "Shape preset (" + joined(model::synthetic_presets("llama")) + ")")
      ->capture_default_str();
  app.add_option("--type", o->weight_type, "Weight type (" + joined(model::synthetic_weight_types()) + ")")
      ->check(CLI::IsMember(model::synthetic_weight_types()))
      ->capture_default_str();
  app.add_option("--vocab", o->vocab_path, "Copy the tokenizer from this GGUF (default: built-in byte-level BPE)")
      ->check(CLI::ExistingFile);
  app.add_option("--seed", o->seed, "Random seed")->capture_default_str();
  app.add_option("-t,--threads", o->n_threads, "Threads (default: all)")->check(CLI::Range(0, 1024));
  // Presets depend on the architecture, so they are checked after parsing.
  app.callback([o] {
    const auto presets = model::synthetic_presets(o->arch);
    if (std::find(presets.begin(), presets.end(), o->preset) == presets.end()) {
      throw CLI::ValidationError("--preset", "'" + o->preset + "' is not a preset of " + o->arch + " (" +
                                                 joined(presets) + ")");
    }
  });
  return [output, o] { return run_make_model(*output, *o); };
});

}  // namespace
}  // namespace keel::cli
