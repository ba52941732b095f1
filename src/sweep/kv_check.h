// `keel serve --kv-check`: at start-up, measure the configured K/V cache types against an
// f32 KV baseline on a built-in prompt (engine/kv_quality.h), log a warning when the
// quantized cache degrades the model beyond the thresholds, and expose the figures as
// Prometheus gauges on /metrics.
//
// Contract:
//  - kv_startup_check() runs only when K or V is a block-quantized type (f16/bf16/f32
//    caches are not checked: nullopt). It costs one short greedy run with an f32 cache
//    plus one teacher-forced pass; it allocates its own small caches.
//  - It never throws for a model the server could load: a failure of the check itself
//    is logged as a warning and yields nullopt (the server still starts).
//  - KvCheckMetrics is thread-safe: set() from the loading thread, prometheus() from
//    HTTP threads.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "engine/kv_quality.h"
#include "engine/model_backend.h"

namespace keel::sweep {

std::optional<engine::KvQualityResult> kv_startup_check(const engine::LoadedModel& loaded,
                                                        const engine::LoadOptions& load);

class KvCheckMetrics {
 public:
  void set(const std::optional<engine::KvQualityResult>& result);
  // keel_kv_quality_mean_kl / _top1_agreement / _first_divergence / _degraded gauges
  // labelled with the types; empty before set() or when the check did not run.
  std::string prometheus() const;

 private:
  mutable std::mutex mutex_;
  std::optional<engine::KvQualityResult> result_;  // guarded by mutex_
};

}  // namespace keel::sweep
