// Probes of this machine's limits for `keel bench --roofline`: memory read bandwidth and
// the peak rates of the dot-product instructions the kernels use. Each function runs on
// the calling thread only (the caller spreads it over a pool) and returns the work done,
// so the caller times it. Results are discarded into a sink the compiler cannot remove.
// Thread-safety: pure; distinct buffers per thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace keel::kernels::probe {

// Reads bytes [0, n) of `data` (64-byte aligned, n a multiple of 256) once; returns a
// checksum so the loads stay.
uint64_t read_bytes(const uint8_t* data, size_t n);

// Runs `iters` rounds of independent int8 dot-product accumulations (12 chains: AVX-512 VNNI
// vpdpbusd, else AVX2 vpmaddubsw + vpmaddwd + vpaddd) and returns the multiply-adds done
// (0 when the machine has neither).
uint64_t int8_dot_macs(int64_t iters);
// As above with AVX-512 BF16 vdpbf16ps (0 when missing).
uint64_t bf16_dot_macs(int64_t iters);
// As above with f32 FMA (AVX-512 when present, else AVX2; 0 when neither).
uint64_t f32_fma_macs(int64_t iters);

}  // namespace keel::kernels::probe
