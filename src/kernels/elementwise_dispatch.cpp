// Picks the element-wise table once: AVX-512, else AVX2, else the scalar twin.
#include "kernels/elementwise_isa.h"

namespace keel::kernels {

const ElementwiseOps& elementwise_ops() {
  static const ElementwiseOps& ops = [] () -> const ElementwiseOps& {
    if (const ElementwiseOps* o = elementwise_avx512_ops()) return *o;
    if (const ElementwiseOps* o = elementwise_avx2_ops()) return *o;
    return elementwise_scalar_ops();
  }();
  return ops;
}

}  // namespace keel::kernels
