// TokenHistory — the penalty window: the last `window` accepted tokens and how often
// each occurs among them, updated incrementally so a step costs O(1) per accepted token
// rather than a recount of the window.
//
// Contract:
//  - window > 0 keeps that many most recent tokens; -1 keeps every token ever accepted
//    (bounded by the request's context); 0 keeps nothing (penalties off).
//  - counts() lists each distinct token in the window with its count, in ascending token
//    order, so penalty application is deterministic.
//  - Not thread-safe; owned by one Sampler.
#pragma once

#include <cstdint>
#include <deque>
#include <map>

namespace keel::sampling {

class TokenHistory {
 public:
  explicit TokenHistory(int32_t window);

  void push(int32_t token);
  void clear();
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::map<int32_t, int32_t>& counts() const { return counts_; }

 private:
  int32_t window_;
  std::deque<int32_t> tokens_;         // oldest first
  std::map<int32_t, int32_t> counts_;  // token → occurrences in tokens_ (> 0)
};

}  // namespace keel::sampling
