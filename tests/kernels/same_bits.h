// Bitwise comparison of kernel outputs for the tests of kernels with a defined arithmetic.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace keel::kernels {

// Bitwise equal, except that any NaN matches any NaN (the payload of a NaN is not part of
// the defined arithmetic: x86 picks an operand's, and the compiler may commute operands).
inline ::testing::AssertionResult same_bits(const std::vector<float>& want, const std::vector<float>& got) {
  if (want.size() != got.size()) {
    return ::testing::AssertionFailure() << "sizes differ: want " << want.size() << " got " << got.size();
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (std::memcmp(&want[i], &got[i], 4) != 0) {
      return ::testing::AssertionFailure() << "at " << i << ": want " << want[i] << " got " << got[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace keel::kernels
