#include "sampling/stages.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/error.h"

namespace keel::sampling {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float clamp_finite_above(float v) { return v > FLT_MAX ? FLT_MAX : v; }

[[noreturn]] void throw_all_masked(size_t n_vocab) {
  throw Error(ErrorCode::kInvalidArgument,
              "sampling: every one of the " + std::to_string(n_vocab) +
                  " tokens is masked (-inf after logit_bias and penalties); nothing can be sampled");
}

float max_logit(const CandidateSet& set) {
  if (set.sorted) return set.items.front().logit;
  float m = kNegInf;
  for (const Candidate& c : set.items) m = std::max(m, c.logit);
  return m;
}

}  // namespace

bool candidate_before(const Candidate& a, const Candidate& b) {
  if (a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

void check_logits(std::span<const float> logits) {
  if (logits.empty()) throw Error(ErrorCode::kInvalidArgument, "sampling: empty logits row (n_vocab = 0)");
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "sampling: logits[" + std::to_string(i) + "] is " + (std::isnan(v) ? "NaN" : "+inf") +
                      "; the model produced a non-finite score, no distribution can be formed");
    }
  }
}

void apply_logit_bias(std::span<float> logits, const std::vector<std::pair<int32_t, float>>& bias) {
  for (const auto& [id, b] : bias) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) {
      throw Error(ErrorCode::kInvalidArgument, "sampling: logit_bias names token " + std::to_string(id) +
                                                   ", outside the vocabulary of " +
                                                   std::to_string(logits.size()) + " tokens");
    }
    logits[id] = clamp_finite_above(logits[id] + b);
  }
}

void apply_penalties(std::span<float> logits, const std::map<int32_t, int32_t>& counts,
                     const PenaltyOptions& options) {
  for (const auto& [id, count] : counts) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float v = logits[id];
    if (v == kNegInf) continue;  // masked stays masked (-inf - -inf would be NaN)
    if (options.repeat_penalty != 1.0f) {
      v = v > 0.0f ? v / options.repeat_penalty : v * options.repeat_penalty;
    }
    v -= static_cast<float>(count) * options.frequency_penalty + options.presence_penalty;
    logits[id] = clamp_finite_above(v);
  }
}

void collect_candidates(std::span<const float> logits, CandidateSet* set) {
  set->items.clear();
  set->sorted = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > kNegInf) set->items.push_back({static_cast<int32_t>(i), logits[i]});
  }
  if (set->items.empty()) throw_all_masked(logits.size());
}

int32_t argmax_unmasked(std::span<const float> logits) {
  int64_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    // Strictly greater: the first (lowest id) of equal maxima wins.
    if (logits[i] > kNegInf && (best < 0 || logits[i] > logits[best])) best = static_cast<int64_t>(i);
  }
  if (best < 0) throw_all_masked(logits.size());
  return static_cast<int32_t>(best);
}

void sort_candidates(CandidateSet* set) {
  if (set->sorted) return;
  std::sort(set->items.begin(), set->items.end(), candidate_before);
  set->sorted = true;
}

std::vector<double> candidate_probs(const CandidateSet& set) {
  const double m = max_logit(set);
  std::vector<double> p(set.items.size());
  double total = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] = std::exp(static_cast<double>(set.items[i].logit) - m);
    total += p[i];
  }
  for (double& v : p) v /= total;
  return p;
}

void apply_top_k(CandidateSet* set, int32_t k) {
  if (k <= 0) return;
  auto& items = set->items;
  const size_t keep = std::min(items.size(), static_cast<size_t>(k));
  if (!set->sorted) {
    // Only the first `keep` need ordering; sorting all of a 150k vocabulary is wasted work.
    std::partial_sort(items.begin(), items.begin() + keep, items.end(), candidate_before);
    set->sorted = true;
  }
  items.resize(keep);
}

void apply_typical_p(CandidateSet* set, float p) {
  if (p >= 1.0f || set->items.size() <= 1) return;
  sort_candidates(set);
  const std::vector<double> probs = candidate_probs(*set);
  double entropy = 0.0;
  for (double q : probs) {
    if (q > 0.0) entropy -= q * std::log(q);
  }
  // Distance of each token's surprise from the expected surprise; typical tokens first.
  std::vector<double> distance(probs.size());
  for (size_t i = 0; i < probs.size(); ++i) {
    distance[i] = probs[i] > 0.0 ? std::fabs(-std::log(probs[i]) - entropy)
                                 : std::numeric_limits<double>::infinity();
  }
  std::vector<size_t> order(probs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable: equal distances keep canonical order, so ties resolve by logit then id.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return distance[a] < distance[b]; });
  double cum = 0.0;
  size_t keep = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    cum += probs[order[i]];
    if (cum >= p) {
      keep = i + 1;
      break;
    }
  }
  std::vector<size_t> kept(order.begin(), order.begin() + keep);
  std::sort(kept.begin(), kept.end());  // back to canonical order
  std::vector<Candidate> out;
  out.reserve(keep);
  for (size_t i : kept) out.push_back(set->items[i]);
  set->items = std::move(out);
}

namespace {

// Keeps the canonical prefix of `items` (already in canonical order) whose mass first
// reaches `target`; returns false if rounding left the target out of reach.
bool keep_nucleus(std::vector<Candidate>* items, size_t prefix, double m, double target) {
  double cum = 0.0;
  for (size_t i = 0; i < prefix; ++i) {
    cum += std::exp(static_cast<double>((*items)[i].logit) - m);
    if (cum >= target) {
      items->resize(i + 1);
      return true;
    }
  }
  return false;
}

}  // namespace

void apply_top_p(CandidateSet* set, float p) {
  if (p >= 1.0f || set->items.size() <= 1) return;
  auto& items = set->items;
  const double m = max_logit(*set);
  double lo = m;
  for (const Candidate& c : items) lo = std::min(lo, static_cast<double>(c.logit));
  // A histogram of probability mass by distance below the best logit finds how many
  // top tokens the nucleus needs, so only those get sorted (a flat 150k-token row can
  // need tens of thousands; a peaked one a handful). Buckets are monotone in the logit,
  // so the tokens in buckets 0..B are exactly a canonical prefix of the full sort.
  constexpr int kBuckets = 1024;
  const double range = m - lo;
  const auto bucket_of = [&](float logit) {
    if (range <= 0.0) return 0;
    return std::min(kBuckets - 1, static_cast<int>((m - static_cast<double>(logit)) / range * kBuckets));
  };
  std::vector<double> mass(kBuckets, 0.0);
  double total = 0.0;
  for (const Candidate& c : items) {
    const double w = std::exp(static_cast<double>(c.logit) - m);
    mass[bucket_of(c.logit)] += w;
    total += w;
  }
  const double target = static_cast<double>(p) * total;
  if (!set->sorted) {
    int last = kBuckets - 1;
    double cum = 0.0;
    for (int b = 0; b < kBuckets; ++b) {
      cum += mass[b];
      if (cum >= target) {
        last = b;
        break;
      }
    }
    const auto front_end = std::partition(items.begin(), items.end(),
                                          [&](const Candidate& c) { return bucket_of(c.logit) <= last; });
    std::sort(items.begin(), front_end, candidate_before);
    if (keep_nucleus(&items, static_cast<size_t>(front_end - items.begin()), m, target)) {
      set->sorted = true;
      return;
    }
    sort_candidates(set);  // rounding: the bucket sums said yes, the walk said no
  }
  set->sorted = true;
  keep_nucleus(&items, items.size(), m, target);  // not reached: keep every token
}

void apply_min_p(CandidateSet* set, float min_p) {
  if (min_p <= 0.0f || set->items.size() <= 1) return;
  // p_i >= min_p * p_max  ⇔  logit_i - logit_max >= ln(min_p): no softmax needed.
  const double m = max_logit(*set);
  const double floor = std::log(static_cast<double>(min_p));
  auto& items = set->items;
  items.erase(std::remove_if(items.begin(), items.end(),
                             [&](const Candidate& c) { return static_cast<double>(c.logit) - m < floor; }),
              items.end());
}

int32_t pick_greedy(const CandidateSet& set) {
  if (set.sorted) return set.items.front().id;
  const Candidate* best = &set.items.front();
  for (const Candidate& c : set.items) {
    if (candidate_before(c, *best)) best = &c;
  }
  return best->id;
}

int32_t pick_sampled(const CandidateSet& set, float temperature, double u) {
  const double m = max_logit(set);
  std::vector<double> w(set.items.size());
  double total = 0.0;
  for (size_t i = 0; i < w.size(); ++i) {
    // Divide, not multiply by 1/T: a tiny T would make 1/T infinite and 0 * inf NaN.
    w[i] = std::exp((static_cast<double>(set.items[i].logit) - m) / static_cast<double>(temperature));
    total += w[i];
  }
  const double target = u * total;
  double cum = 0.0;
  int32_t last_positive = set.items.front().id;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] <= 0.0) continue;
    last_positive = set.items[i].id;
    cum += w[i];
    if (target < cum) return set.items[i].id;
  }
  return last_positive;  // u * total rounded up to the final sum
}

}  // namespace keel::sampling
