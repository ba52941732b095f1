// Sweep configurations — the rows of `keel sweep`: flash attention, K/V cache types,
// context and slots, expanded as a cross product of per-axis lists or given explicitly
// ("fa=on,ctk=q8_0,ctv=q8_0,c=8192,np=1;fa=off,...").
//
// Contract:
//  - Pure functions; parse errors throw keel::Error(kInvalidArgument) naming the text.
//  - Expansion order is fixed (fa, ctk, ctv, ctx, np; the last varies fastest), so the
//    first row — the default baseline — is the first value of every axis.
//  - An empty V list means "V follows K" (symmetric K+V rows, the incident's advice).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/types.h"

namespace keel::sweep {

struct SweepConfig {
  bool flash_attention = true;
  tensor::DType k_type = tensor::DType::kF16;
  tensor::DType v_type = tensor::DType::kF16;
  int32_t n_ctx = 4096;
  int32_t n_parallel = 1;

  // "fa=on,ctk=q8_0,ctv=q8_0,c=8192,np=1" — also the --configs syntax, and what
  // KEEL_SWEEP_CRASH matches against.
  std::string label() const;
  bool operator==(const SweepConfig&) const = default;
};

struct SweepAxes {
  std::vector<bool> flash_attention{true};
  std::vector<tensor::DType> k_types{tensor::DType::kF16};
  std::vector<tensor::DType> v_types;  // empty: V = K
  std::vector<int32_t> contexts{4096};
  std::vector<int32_t> parallel{1};
};

// "on,off" → {true,false}; "f16,q8_0" → types; "8192,32k" → sizes (k = ×1024).
std::vector<bool> parse_on_off_list(std::string_view text, std::string_view flag);
std::vector<tensor::DType> parse_type_list(std::string_view text, std::string_view flag);
std::vector<int32_t> parse_int_list(std::string_view text, std::string_view flag);

std::vector<SweepConfig> expand(const SweepAxes& axes);

// Explicit rows separated by ';'. Keys: fa, ctk, ctv, c (or ctx), np (or parallel); a
// key left out takes `defaults`' value (ctv left out follows ctk).
std::vector<SweepConfig> parse_configs(std::string_view text, const SweepConfig& defaults);

}  // namespace keel::sweep
