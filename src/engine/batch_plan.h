// plan_batch — which slots get how many tokens in one step (continuous batching with
// chunked prefill).
//
// Contract:
//  - Decode first: every generating slot gets its one token, so running streams keep
//    producing while a long prompt is prefilled. When there are more of them than the
//    budget, the ones served start at `rotation` (mod their count) so none starves.
//  - Then prefill chunks in admission order (FCFS), each the rest of its prompt or what
//    is left of the budget.
//  - Pure function: the plan depends only on its inputs.
#pragma once

#include <cstdint>
#include <vector>

namespace keel::engine {

struct SlotDemand {
  int32_t slot = 0;
  bool decoding = false;     // one token; else prefill of `remaining` prompt tokens
  int64_t remaining = 0;
  uint64_t admitted = 0;     // admission order (FCFS among prefills)
};

struct SlotShare {
  int32_t slot = 0;
  int64_t n_tokens = 0;
};

std::vector<SlotShare> plan_batch(const std::vector<SlotDemand>& demands, int64_t budget,
                                  uint64_t rotation);

}  // namespace keel::engine
