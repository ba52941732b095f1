// `keel bench --roofline`: what this machine can do, and what that bounds a model to.
// measure_machine() runs the probes of kernels/roofline_probe.h on every pool thread at
// once. Read bandwidth is a shared resource, so it is timed by the wall clock of passes in
// which all threads stream at the same time (a start barrier; a pass counts only if no
// thread lost the CPU during it), best of many short passes over a buffer far larger than
// the caches. The dot-product peaks are per core, so each thread is timed by its own CPU
// clock and the rates summed (other processes on a shared machine do not lower them).
// model_bounds() turns a model's bytes and FLOPs per token into tokens/s bounds.
// Thread-safety: drives the caller's pool; no shared state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace keel {
class ThreadPool;
}

namespace keel::cli {

struct RooflineOptions {
  size_t read_bytes = size_t{1} << 30;  // read-probe buffer (keep it far beyond the L3)
  int read_passes = 32;                 // timed passes; each reads 1/8 of the buffer
};

struct MachineRoofline {
  int threads = 0;
  double read_gbs = 0;      // memory read bandwidth, GB/s (best clean pass)
  std::vector<double> read_passes_gbs;  // every pass in order, GB/s
  std::vector<bool> read_passes_clean;  // per pass: no thread was descheduled during it
  double int8_tops = 0;     // int8 dot-product peak, tera-ops/s (1 MAC = 2 ops)
  double bf16_tflops = 0;   // bf16 dot-product peak
  double f32_tflops = 0;    // f32 FMA peak

  // Passes with no thread descheduled (when 0, read_gbs is the best of all passes).
  int read_clean_passes() const {
    return static_cast<int>(std::count(read_passes_clean.begin(), read_passes_clean.end(), true));
  }
};

MachineRoofline measure_machine(ThreadPool& pool, const RooflineOptions& options = {});

struct ModelBounds {
  double weight_bytes_per_token = 0;  // bytes a decode step reads (every matrix once)
  double flops_per_token = 0;         // 2 x multiply-adds of the matrices (no attention)
  double tg_bound_ts = 0;             // read_gbs / weight bytes per token
  double pp_bound_ts = 0;             // peak of the path this weight type uses / flops
  std::string pp_path;                // "int8", "bf16", "f32" (the arithmetic prompt processing uses)
};

ModelBounds model_bounds(const model::Model& m, const MachineRoofline& machine);

}  // namespace keel::cli
