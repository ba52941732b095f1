// Which arithmetic kernels::matmul uses for block-quantized weights.
//
//   kAuto       integer path (8-bit activations, qmatmul.h) with the best SIMD kernels of
//               this machine where the weight type has one, else the f32 reference.
//   kTwin       integer path, scalar twin only (same bits as kAuto; for tests and timing).
//   kReference  f32 activations against dequantized weight rows (the original oracle; what
//               comparisons with float64 references of quantized models need).
// The default comes from KEEL_MATMUL=auto|twin|reference (else kAuto). ScopedMatmulPath
// overrides it for the calling thread — the thread that calls matmul decides; pool
// workers follow it. Thread-safety: thread-local, no sharing.
#pragma once

namespace keel::kernels {

enum class MatmulPath { kAuto, kTwin, kReference };

MatmulPath matmul_path();
const char* matmul_path_name(MatmulPath path);

class ScopedMatmulPath {
 public:
  explicit ScopedMatmulPath(MatmulPath path);
  ~ScopedMatmulPath();
  ScopedMatmulPath(const ScopedMatmulPath&) = delete;
  ScopedMatmulPath& operator=(const ScopedMatmulPath&) = delete;

 private:
  int saved_;
};

}  // namespace keel::kernels
