// `keel bench --roofline`: what this machine can do, and what that bounds a model to.
// measure_machine() runs the probes of kernels/roofline_probe.h on every pool thread at
// once, each timed by its own thread CPU clock (so other processes on a shared machine do
// not lower the figures; the machine's peak is what is asked); model_bounds() turns a model's bytes and FLOPs per token into tokens/s bounds.
// Thread-safety: drives the caller's pool; no shared state.
#pragma once

#include <cstdint>
#include <string>

#include "model/model.h"

namespace keel {
class ThreadPool;
}

namespace keel::cli {

struct MachineRoofline {
  int threads = 0;
  double read_gbs = 0;      // memory read bandwidth, GB/s (best of several passes)
  double int8_tops = 0;     // int8 dot-product peak, tera-ops/s (1 MAC = 2 ops)
  double bf16_tflops = 0;   // bf16 dot-product peak
  double f32_tflops = 0;    // f32 FMA peak
};

MachineRoofline measure_machine(ThreadPool& pool);

struct ModelBounds {
  double weight_bytes_per_token = 0;  // bytes a decode step reads (every matrix once)
  double flops_per_token = 0;         // 2 x multiply-adds of the matrices (no attention)
  double tg_bound_ts = 0;             // read_gbs / weight bytes per token
  double pp_bound_ts = 0;             // peak of the path this weight type uses / flops
  std::string pp_path;                // "int8", "f32" (the arithmetic prompt processing uses)
};

ModelBounds model_bounds(const model::Model& m, const MachineRoofline& machine);

}  // namespace keel::cli
