// Rng — the per-request random stream: xoshiro256** (Blackman & Vigna, 2018), its
// 256-bit state filled from the 64-bit seed by splitmix64, as the authors recommend.
//
// Contract:
//  - Same seed → same sequence of 64-bit words on every platform and compiler (pure
//    integer arithmetic; no <random> distributions, whose outputs are
//    implementation-defined).
//  - uniform() maps the top 53 bits of one word to a double in [0, 1): exactly one word
//    per call, so the stream position is simply the number of draws.
//  - Not thread-safe; one per request, owned by the engine thread.
#pragma once

#include <array>
#include <cstdint>

namespace keel::sampling {

// splitmix64 step: advances *state and returns the next output. Exposed for testing
// against the published reference outputs.
uint64_t splitmix64_next(uint64_t* state);

class Rng {
 public:
  explicit Rng(uint64_t seed);
  // A raw state (not all zero), for checking against the reference implementation.
  static Rng from_state(const std::array<uint64_t, 4>& state);

  uint64_t next_u64();
  double uniform();  // [0, 1), 53 random bits

 private:
  Rng() = default;
  uint64_t s_[4] = {};
};

}  // namespace keel::sampling
