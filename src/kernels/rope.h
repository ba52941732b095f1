// Rotary position embedding (RoPE) on rows of heads.
//
// Pair i (0 <= i < n_rot/2) of a head is rotated by θ_i(pos):
//   θ_extrap = pos · base^(−2i/n_rot) / freq_factors[i]     (freq_factors: rope_freqs, optional)
//   θ_interp = θ_extrap · freq_scale                          (linear scaling)
//   θ        = θ_interp, or with YaRN (ext_factor > 0) a ramp mix of θ_interp and θ_extrap
//              over the correction dims from beta_fast/beta_slow and n_ctx_orig;
//   cos/sin are multiplied by attn_factor, and with YaRN by 1 + 0.1·ln(1/freq_scale).
// kNormal rotates adjacent pairs (2i, 2i+1) (llama's converter permuted Q/K for it);
// kNeox rotates (i, i + n_rot/2). Dims n_rot..head_dim−1 pass through (partial rotary).
// Angles are computed in double, then rounded once. rope() keeps the cos/sin rows of its last
// few (parameters, positions) batches per thread (rope_angles.h): the Q and K calls of every
// layer of one forward pass compute them once. The rotation runs on the element-wise SIMD table
// (elementwise_isa.h), bitwise equal to its scalar twin.
//
// Contract: thread-safe; results depend only on the arguments (the cache holds exact copies
// of fresh values; ~n_rows·n_rot·16 bytes per thread). n_rot even, 0 < n_rot <= head_dim, else
// keel::Error.
#pragma once

#include <cstdint>

namespace keel::kernels {

enum class RopeMode { kNormal, kNeox };

struct RopeParams {
  RopeMode mode = RopeMode::kNormal;
  int64_t n_rot = 0;
  float base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;  // [n_rot/2] or nullptr; not owned
  // YaRN (ext_factor 0 = off).
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  int64_t n_ctx_orig = 0;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
};

// cos/sin of each pair at `pos` ([n_rot/2] each). with_magnitude=false gives a pure rotation
// (used to re-rotate cached keys, whose magnitude factor was applied once already).
void rope_cos_sin(const RopeParams& p, double pos, bool with_magnitude, float* cos_out,
                  float* sin_out);

// x: [n_rows][n_heads * head_dim], rotated in place; pos: [n_rows].
void rope(float* x, const int64_t* pos, int64_t n_rows, int64_t n_heads, int64_t head_dim,
          const RopeParams& p);

// Re-rotates already rotated rows by `delta` positions (a context shift). Because θ is
// linear in pos, rotating by θ(delta) equals rotating from scratch at pos + delta (up to
// rounding); the magnitude factor is not applied again.
void rope_shift(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t delta,
                const RopeParams& p);

}  // namespace keel::kernels
