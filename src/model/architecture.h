// Architecture — what differs between model families: the per-layer plan (sliding
// windows, RoPE per layer, attention scale/soft-capping), which tensors exist and their
// shapes, and how the blocks are composed in the forward pass. One arch_*.cpp per family;
// shared code never switches on the architecture name.
//
// Contract: plan() then bind() run once at load (single thread); forward() is const and
// may run many times; a bound Architecture holds views into the model's mapped file and
// binder storage, which the Model keeps alive.
#pragma once

#include <memory>
#include <string>

#include "model/forward_pass.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace keel::model {

class Architecture {
 public:
  virtual ~Architecture() = default;
  // Fills hp.layers (window, rope, scale, soft-cap per layer) and arch-specific defaults.
  virtual void plan(const gguf::GgufFile& file, HParams& hp) const = 0;
  // Binds and shape-checks weights; sets hp.n_vocab and plan pointers into weights
  // (e.g. rope_freqs).
  virtual void bind(WeightBinder& binder, HParams& hp) = 0;
  // Embeddings → layers → the logits of the rows that want them.
  virtual void forward(ForwardPass& fp) const = 0;
};

// The architecture of `general.architecture`; keel::Error(kUnsupported) naming it if unknown.
std::unique_ptr<Architecture> make_architecture(const std::string& name);

// Factories, one per arch file (explicit, so static linking never drops one).
std::unique_ptr<Architecture> make_llama();
std::unique_ptr<Architecture> make_qwen2();
std::unique_ptr<Architecture> make_qwen3();
std::unique_ptr<Architecture> make_gemma2();
std::unique_ptr<Architecture> make_gemma3();
std::unique_ptr<Architecture> make_gpt_oss();

}  // namespace keel::model
