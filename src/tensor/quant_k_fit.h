// Internal to src/tensor: the scale (and min) searches the K-quant quantizers share.
//
// Both fitters try a small fan of candidate inverse scales around the naive one, assign
// codes for each, solve the least-squares scale (and offset) for those codes, and keep the
// candidate with the smallest squared error. Pure functions; deterministic.
#pragma once

#include <cstdint>

namespace keel::tensor::detail {

// Fits x[j] ~= scale * L[j] - min with L[j] in [0, nmax], scale >= 0 and min >= 0
// (the offset -min is at most 0, as K-quant mins are stored unsigned).
struct AffineFit {
  float scale = 0.0f;
  float min = 0.0f;
};
AffineFit fit_affine(const float* x, int n, int nmax, uint8_t* L);

// Fits x[j] ~= scale * L[j] with L[j] in [lo, hi] (lo < 0 < hi); scale may be negative.
float fit_symmetric(const float* x, int n, int lo, int hi, int8_t* L);

// Codes for a given (already quantized) scale: L = clamp(round((x + min) / scale)).
void assign_affine(const float* x, int n, int nmax, float scale, float min, uint8_t* L);
void assign_symmetric(const float* x, int n, int lo, int hi, float scale, int8_t* L);

// Quantizes non-negative sub-block values v[0..n) to codes in [0, levels_max] against one
// shared fp16 super-scale; returns the scale's fp16 bits. Codes go to `codes`.
uint16_t quantize_sub_scales(const float* v, int n, int levels_max, uint8_t* codes);

}  // namespace keel::tensor::detail
