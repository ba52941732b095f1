#include "engine/batch_plan.h"

#include <algorithm>

namespace keel::engine {

std::vector<SlotShare> plan_batch(const std::vector<SlotDemand>& demands, int64_t budget,
                                  uint64_t rotation) {
  std::vector<SlotShare> plan;
  std::vector<const SlotDemand*> decoders, prefills;
  for (const SlotDemand& d : demands) {
    if (d.decoding) {
      decoders.push_back(&d);
    } else if (d.remaining > 0) {
      prefills.push_back(&d);
    }
  }
  size_t n_dec = decoders.size();
  size_t take = std::min<size_t>(n_dec, static_cast<size_t>(std::max<int64_t>(budget, 0)));
  size_t start = n_dec == 0 ? 0 : static_cast<size_t>(rotation % n_dec);
  if (take == n_dec) start = 0;  // everyone fits: keep slot order
  for (size_t i = 0; i < take; ++i) plan.push_back({decoders[(start + i) % n_dec]->slot, 1});
  budget -= static_cast<int64_t>(take);

  std::stable_sort(prefills.begin(), prefills.end(),
                   [](const SlotDemand* a, const SlotDemand* b) { return a->admitted < b->admitted; });
  for (const SlotDemand* d : prefills) {
    if (budget <= 0) break;
    int64_t n = std::min(d->remaining, budget);
    plan.push_back({d->slot, n});
    budget -= n;
  }
  return plan;
}

}  // namespace keel::engine
