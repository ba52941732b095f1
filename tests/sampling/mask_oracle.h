// The oracle the constraint tests compare JsonConstraint::mask against: probe every token's
// bytes on a copy of a checker the test keeps itself (no shortcuts), end tokens allowed
// exactly when the text is complete.
#pragma once

#include <cmath>
#include <vector>

#include "sampling/json_constraint.h"

namespace keel::sampling {

template <typename Checker>
std::vector<bool> oracle_allowed(const TokenBytes& v, const Checker& state) {
  std::vector<bool> out(v.bytes.size());
  for (size_t t = 0; t < v.bytes.size(); ++t) {
    if (v.end[t]) {
      out[t] = state.complete();
    } else if (!state.complete() && !v.bytes[t].empty()) {
      Checker probe = state;
      out[t] = probe.feed(v.bytes[t]);
    }
  }
  return out;
}

// What the constraint's mask leaves of a row of zeros.
inline std::vector<bool> mask_allowed(const JsonConstraint& c, size_t n_vocab) {
  std::vector<float> logits(n_vocab, 0.0f);
  c.mask(logits);
  std::vector<bool> out(n_vocab);
  for (size_t t = 0; t < n_vocab; ++t) out[t] = !std::isinf(logits[t]);
  return out;
}

// The first token where the two differ, or -1.
inline int64_t first_difference(const std::vector<bool>& a, const std::vector<bool>& b) {
  for (size_t t = 0; t < a.size() && t < b.size(); ++t) {
    if (a[t] != b[t]) return static_cast<int64_t>(t);
  }
  return a.size() == b.size() ? -1 : static_cast<int64_t>(std::min(a.size(), b.size()));
}

inline std::vector<int32_t> allowed_ids(const std::vector<bool>& allowed) {
  std::vector<int32_t> out;
  for (size_t t = 0; t < allowed.size(); ++t) {
    if (allowed[t]) out.push_back(static_cast<int32_t>(t));
  }
  return out;
}

}  // namespace keel::sampling
