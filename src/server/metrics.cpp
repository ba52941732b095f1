#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace keel::server {
namespace {

// Appends Prometheus text, one family at a time.
class PromText {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(const std::string& name, const std::string& labels, double value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += ' ';
    out_ += number(value);
    out_ += '\n';
  }
  void single(const char* name, const char* type, const char* help, double value) {
    family(name, type, help);
    sample(name, "", value);
  }
  static std::string number(double v) {
    char buf[64];
    if (v == static_cast<double>(static_cast<int64_t>(v))) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else {
      std::snprintf(buf, sizeof buf, "%.9g", v);
    }
    return buf;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

const char* const kOutcomes[] = {"stop", "length", "cancelled", "deadline", "error"};

void render_engine(const engine::EngineStats& s, const MetricsInput& in, PromText& p) {
  p.family("keel_requests_total", "counter", "Requests finished by the engine, by outcome.");
  for (size_t i = 0; i < 5; ++i) {
    p.sample("keel_requests_total", std::string("outcome=\"") + kOutcomes[i] + "\"",
             static_cast<double>(s.requests_finished[i]));
  }
  p.single("keel_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
           static_cast<double>(s.prompt_tokens));
  p.single("keel_generated_tokens_total", "counter", "Completion tokens generated.",
           static_cast<double>(s.generated_tokens));
  p.single("keel_cached_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
           static_cast<double>(s.cached_tokens));
  p.single("keel_queue_depth", "gauge", "Requests waiting for a slot.",
           static_cast<double>(s.queue_depth));
  p.family("keel_slots", "gauge", "Slots by state.");
  p.sample("keel_slots", "state=\"busy\"", static_cast<double>(s.slots_busy));
  p.sample("keel_slots", "state=\"idle\"", static_cast<double>(std::max<int64_t>(0, in.n_parallel - s.slots_busy)));
  p.family("keel_kv_pages", "gauge", "KV cache pages by state.");
  p.sample("keel_kv_pages", "state=\"used\"", static_cast<double>(s.kv_pages_used));
  p.sample("keel_kv_pages", "state=\"cached\"", static_cast<double>(s.kv_pages_cached));
  p.sample("keel_kv_pages", "state=\"total\"", static_cast<double>(s.kv_pages_total));
  p.single("keel_cancellations_total", "counter", "Requests cancelled (client gone, shutdown).",
           static_cast<double>(s.cancellations));
  p.single("keel_isolated_failures_total", "counter",
           "Requests failed by an engine step error while the server kept serving.",
           static_cast<double>(s.isolated_failures));
  p.single("keel_faults_injected_total", "counter", "Faults injected (KEEL_FAULT).",
           static_cast<double>(s.faults_injected));
  p.single("keel_empty_attention_rows_total", "counter",
           "Attention rows with no visible key (should stay 0).",
           static_cast<double>(s.empty_attention_rows));
  p.family("keel_step_seconds", "histogram", "Engine step wall time.");
  for (size_t i = 0; i < in.step_bounds.size() && i < s.step_seconds_buckets.size(); ++i) {
    p.sample("keel_step_seconds_bucket", "le=\"" + PromText::number(in.step_bounds[i]) + "\"",
             s.step_seconds_buckets[i]);
  }
  p.sample("keel_step_seconds_bucket", "le=\"+Inf\"", static_cast<double>(s.steps));
  p.sample("keel_step_seconds_sum", "", s.step_seconds_sum);
  p.sample("keel_step_seconds_count", "", static_cast<double>(s.steps));
}

}  // namespace

void ServerCounters::count_response(int status) {
  size_t slot = kCountedStatuses.size() - 1;  // "other"
  for (size_t i = 0; i + 1 < kCountedStatuses.size(); ++i) {
    if (kCountedStatuses[i] == status) slot = i;
  }
  responses_[slot].fetch_add(1, std::memory_order_relaxed);
}

ServerCountersSnapshot ServerCounters::snapshot() const {
  ServerCountersSnapshot s;
  for (size_t i = 0; i < responses_.size(); ++i) s.responses[i] = responses_[i].load(std::memory_order_relaxed);
  s.heartbeats = heartbeats_.load(std::memory_order_relaxed);
  s.client_disconnects = disconnects_.load(std::memory_order_relaxed);
  s.streams_active = streams_.load(std::memory_order_relaxed);
  s.requests_active = requests_.load(std::memory_order_relaxed);
  return s;
}

std::string render_metrics(const MetricsInput& in) {
  PromText p;
  p.single("keel_ready", "gauge", "1 when the model is loaded and requests are served.", in.ready ? 1 : 0);
  p.family("keel_http_responses_total", "counter", "HTTP responses by status code.");
  for (size_t i = 0; i < kCountedStatuses.size(); ++i) {
    const std::string code = kCountedStatuses[i] ? std::to_string(kCountedStatuses[i]) : "other";
    p.sample("keel_http_responses_total", "code=\"" + code + "\"", static_cast<double>(in.server.responses[i]));
  }
  p.single("keel_heartbeats_total", "counter", "SSE keep-alive comments sent while waiting.",
           static_cast<double>(in.server.heartbeats));
  p.single("keel_client_disconnects_total", "counter",
           "Responses whose write failed (client gone); each cancels its request.",
           static_cast<double>(in.server.client_disconnects));
  p.single("keel_streams_active", "gauge", "SSE streams open.", static_cast<double>(in.server.streams_active));
  p.single("keel_requests_active", "gauge", "Completion requests in flight on HTTP threads.",
           static_cast<double>(in.server.requests_active));
  if (in.engine) render_engine(*in.engine, in, p);
  return p.take();
}

}  // namespace keel::server
