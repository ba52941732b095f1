#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace keel::sampling {

LogprobTable::LogprobTable(const CandidateSet& set) {
  double m = -std::numeric_limits<double>::infinity();
  for (const Candidate& c : set.items) m = std::max(m, static_cast<double>(c.logit));
  double sum = 0.0;
  for (const Candidate& c : set.items) sum += std::exp(static_cast<double>(c.logit) - m);
  log_sum_exp_ = m + std::log(sum);
}

float LogprobTable::logprob_of(float logit) const {
  return static_cast<float>(static_cast<double>(logit) - log_sum_exp_);
}

std::vector<TokenLogprob> LogprobTable::top(const CandidateSet& set, int32_t n) const {
  const size_t keep = std::min(set.items.size(), static_cast<size_t>(std::max(n, 0)));
  std::vector<Candidate> best(keep);
  std::partial_sort_copy(set.items.begin(), set.items.end(), best.begin(), best.end(), candidate_before);
  std::vector<TokenLogprob> out;
  out.reserve(keep);
  for (const Candidate& c : best) out.push_back({c.id, logprob_of(c.logit)});
  return out;
}

TokenScore score_token(std::span<const float> logits, int32_t token, int32_t n_top) {
  if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
    throw Error(ErrorCode::kInvalidArgument, "score_token: token " + std::to_string(token) + " outside a row of " +
                                                 std::to_string(logits.size()));
  }
  check_logits(logits);
  CandidateSet set;
  collect_candidates(logits, &set);
  const LogprobTable table(set);
  return {table.logprob_of(logits[static_cast<size_t>(token)]), table.top(set, n_top)};
}

}  // namespace keel::sampling
