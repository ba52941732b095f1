#include "kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/elementwise_isa.h"
#include "kernels/rope_angles.h"

namespace keel::kernels {

namespace {

void check(const RopeParams& p, int64_t head_dim) {
  if (p.n_rot <= 0 || p.n_rot % 2 != 0 || p.n_rot > head_dim) {
    throw Error(ErrorCode::kInvalidArgument,
                "rope: n_rot " + std::to_string(p.n_rot) + " must be even and in (0, head_dim " +
                    std::to_string(head_dim) + "]");
  }
}

}  // namespace

void rope_cos_sin(const RopeParams& p, double pos, bool with_magnitude, float* cos_out,
                  float* sin_out) {
  using namespace rope_detail;
  cos_sin_at(p, angle_table(p, with_magnitude), pos, cos_out, sin_out);
}

void rope(float* x, const int64_t* pos, int64_t n_rows, int64_t n_heads, int64_t head_dim,
          const RopeParams& p) {
  check(p, head_dim);
  if (n_rows <= 0) return;
  const float* table = rope_detail::rope_rows_cos_sin(p, pos, n_rows);  // [n_rows][n_rot]
  const ElementwiseOps& ops = elementwise_ops();
  const int64_t half = p.n_rot / 2;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* cs = table + r * p.n_rot;
    ops.rope_rotate(x + r * n_heads * head_dim, n_heads, head_dim, p.mode, p.n_rot, cs,
                    cs + half);
  }
}

void rope_shift(float* x, int64_t n_rows, int64_t n_heads, int64_t head_dim, int64_t delta,
                const RopeParams& p) {
  check(p, head_dim);
  const int64_t half = p.n_rot / 2;
  std::vector<float> cs(half), sn(half);
  rope_cos_sin(p, static_cast<double>(delta), false, cs.data(), sn.data());
  const ElementwiseOps& ops = elementwise_ops();
  for (int64_t r = 0; r < n_rows; ++r) {
    ops.rope_rotate(x + r * n_heads * head_dim, n_heads, head_dim, p.mode, p.n_rot, cs.data(),
                    sn.data());
  }
}

}  // namespace keel::kernels
