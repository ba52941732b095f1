// What the engine hands the model for one forward pass.
#pragma once

#include <cstdint>

#include "kv/kv_cache.h"

namespace keel::model {

// One token of a batch. Entries of one sequence must have consecutive positions starting
// at kv.length(seq), in batch order; several sequences may be interleaved.
struct BatchEntry {
  int32_t token = 0;
  int64_t pos = 0;
  kv::SeqId seq = 0;
  bool want_logits = false;
};

struct ForwardOptions {
  bool flash_attention = false;  // tiled online-softmax path instead of the plain one
};

}  // namespace keel::model
