// Prometheus text exposition (format 0.0.4) for /metrics: the engine's counters and
// gauges plus the HTTP layer's own (responses by status, heartbeats, disconnects).
//
// Contract:
//  - ServerCounters is updated lock-free from any HTTP thread; snapshot() is a consistent
//    enough copy for monitoring (each counter read atomically, not all at once).
//  - render_metrics() is a pure function of its inputs: one "# HELP" and "# TYPE" line
//    per family, then its samples; counters end in _total; the step-time histogram has
//    cumulative _bucket{le=...} samples ending in le="+Inf", then _sum and _count.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace keel::server {

// HTTP status classes counted separately (the rest fall into "other").
inline constexpr std::array<int, 10> kCountedStatuses = {200, 400, 401, 404, 405, 413, 429, 500, 503, 0};

struct ServerCountersSnapshot {
  std::array<int64_t, kCountedStatuses.size()> responses{};  // by kCountedStatuses; 0 = other
  int64_t heartbeats = 0;
  int64_t client_disconnects = 0;
  int64_t streams_active = 0;
  int64_t requests_active = 0;
};

class ServerCounters {
 public:
  void count_response(int status);
  void add_heartbeats(int64_t n) { heartbeats_.fetch_add(n, std::memory_order_relaxed); }
  void count_disconnect() { disconnects_.fetch_add(1, std::memory_order_relaxed); }
  void stream_started() { streams_.fetch_add(1, std::memory_order_relaxed); }
  void stream_ended() { streams_.fetch_sub(1, std::memory_order_relaxed); }
  void request_started() { requests_.fetch_add(1, std::memory_order_relaxed); }
  void request_ended() { requests_.fetch_sub(1, std::memory_order_relaxed); }
  ServerCountersSnapshot snapshot() const;

 private:
  std::array<std::atomic<int64_t>, kCountedStatuses.size()> responses_{};
  std::atomic<int64_t> heartbeats_{0}, disconnects_{0}, streams_{0}, requests_{0};
};

struct MetricsInput {
  bool ready = false;
  std::optional<engine::EngineStats> engine;  // absent while the model loads
  std::vector<double> step_bounds;            // finite bucket bounds of engine step time
  int64_t n_parallel = 0;
  ServerCountersSnapshot server;
};

std::string render_metrics(const MetricsInput& input);

}  // namespace keel::server
