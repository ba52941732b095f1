#include "sampling/rng.h"

#include "core/error.h"

namespace keel::sampling {
namespace {

constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

uint64_t splitmix64_next(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
  // splitmix64 never yields four zero words from any seed, so the state is valid.
  uint64_t sm = seed;
  for (uint64_t& word : s_) word = splitmix64_next(&sm);
}

Rng Rng::from_state(const std::array<uint64_t, 4>& state) {
  if (state[0] == 0 && state[1] == 0 && state[2] == 0 && state[3] == 0) {
    throw Error(ErrorCode::kInvalidArgument, "Rng::from_state: the all-zero state is a fixed point");
  }
  Rng rng;
  for (int i = 0; i < 4; ++i) rng.s_[i] = state[i];
  return rng;
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() {
  // 53 bits fill a double's mantissa exactly; the product is exact, so no rounding can
  // reach 1.0.
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

}  // namespace keel::sampling
