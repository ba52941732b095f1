// AVX2 panel kernels of the integer matmul (qmatmul.h). Not written yet: machines without
// AVX-512 VNNI use the scalar twin, which gives the same bits.
#include "kernels/qmatmul.h"

namespace keel::kernels::q {

PanelFn panel_kernel_avx2(tensor::DType) { return nullptr; }

}  // namespace keel::kernels::q
