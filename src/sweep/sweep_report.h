// Sweep rows and their rendering: one row per configuration — the memory plan's verdict,
// what happened, the figures — as a Markdown table (like incident 000's), CSV or JSON.
//
// Contract:
//  - row_from_child() turns a finished child (its JSON lines on stdout, exit status) into
//    a row; it never throws for anything a child printed (malformed lines are ignored,
//    a missing result becomes an error outcome naming the child's last stderr line).
//  - mark_baseline() fills same_as_baseline for every ok row when the baseline row is ok.
//  - Renderers are pure; JSON field names are stable (documented in README, used by tests).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/kv_quality.h"
#include "sweep/child_process.h"
#include "sweep/sweep_config.h"

namespace keel::sweep {

enum class Outcome { kOk, kRefused, kError, kSignal, kTimeout };
const char* outcome_name(Outcome o);  // "ok", "refused", "error", "signal", "timeout"

struct PlanVerdict {
  bool known = false;  // the child reported its plan before loading the KV cache
  bool fits = false;
  uint64_t total_bytes = 0, limit_bytes = 0, weights_bytes = 0, kv_bytes = 0, workspace_bytes = 0;
};

struct StreamCheck {
  bool streamed_equals_whole = false;  // /v1/completions stream:true vs stream:false
  bool equals_engine = false;          // ... and both equal the direct engine text
  int64_t stream_chunks = 0;
};

struct SweepRow {
  SweepConfig config;
  PlanVerdict plan;
  Outcome outcome = Outcome::kError;
  std::string detail;  // error message / refusal / signal name / timeout
  int64_t prompt_tokens = -1, generated_tokens = -1;  // per request (request 0)
  double prefill_tps = 0, gen_tps = 0, ttft_seconds = 0;
  int64_t peak_rss_bytes = 0;
  double wall_seconds = 0;
  std::string text;                        // request 0's completion
  std::optional<bool> same_as_baseline;    // only for ok rows with an ok baseline
  std::optional<bool> parallel_same;       // np > 1: every slot produced request 0's text
  std::optional<StreamCheck> stream;
  std::optional<engine::KvQualityResult> quality;  // vs quality_baseline
};

struct SweepReport {
  std::string model, prompt_file;
  int32_t n_predict = 0;
  size_t baseline_index = 0;  // 0-based row
  std::optional<engine::KvTypePair> quality_baseline;
  std::vector<SweepRow> rows;
};

SweepRow row_from_child(const SweepConfig& config, const ChildResult& child, double timeout_seconds);
void mark_baseline(SweepReport& report);

std::string render_markdown(const SweepReport& report);
std::string render_csv(const SweepReport& report);
std::string render_json(const SweepReport& report);  // pretty, ends in '\n'

}  // namespace keel::sweep
