// RoPE angles: the per-pair cos/sin of rope.h's definition, and a per-thread cache of the
// cos/sin rows of the last few (parameters, positions) batches, so the many rope() calls of one
// forward pass (Q and K of every layer) compute them once. Cached values are the same bits as
// fresh ones (same function), so caching never changes a result.
//
// Contract: internal to kernels/. angle_table/cos_sin_at are pure; rope_rows_cos_sin returns a
// pointer into the calling thread's cache, valid until that thread's next call.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/rope.h"

namespace keel::kernels::rope_detail {

// Everything about the angles that does not depend on the position.
struct AngleTable {
  std::vector<double> inv_freq;  // [n_rot/2] base^(−2i/n_rot)
  double low = 0.0, high = 0.0, mscale = 1.0;
  bool yarn = false;
};

AngleTable angle_table(const RopeParams& p, bool with_magnitude);
// The same into *out, reusing its storage (no allocation once it has held n_rot/2).
void angle_table(const RopeParams& p, bool with_magnitude, AngleTable* out);
void cos_sin_at(const RopeParams& p, const AngleTable& t, double pos, float* cos_out,
                float* sin_out);

// [n_rows][n_rot]: row r holds cos (n_rot/2) then sin (n_rot/2) at pos[r], with magnitude.
const float* rope_rows_cos_sin(const RopeParams& p, const int64_t* pos, int64_t n_rows);

}  // namespace keel::kernels::rope_detail
