// JSON forms of sweep data, shared by the child (which prints one JSON object per line on
// stdout) and the parent (which parses those lines and writes the report).
//
// Child → parent lines, each a one-key object:
//   {"plan": {fits, total_bytes, limit_bytes, weights_bytes, kv_bytes, workspace_bytes}}
//   {"refused": "message"}      the plan does not fit; nothing was allocated
//   {"error": "message"}        a keel::Error ended the run
//   {"result": {figures}}       prompt/generated tokens, t/s, ttft, text, checks
//   {"quality": [results]}      KV quality of each K/V pair vs the baseline
//
// Contract: from_json functions ignore unknown fields and keep defaults for missing ones;
// they throw nlohmann::json exceptions on wrong types (the parent catches them).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/kv_quality.h"
#include "engine/memory_plan.h"
#include "sweep/sweep_report.h"

namespace keel::sweep {

using json = nlohmann::json;

json plan_to_json(const PlanVerdict& plan);
PlanVerdict plan_from_json(const json& j);
PlanVerdict verdict_of(const engine::MemoryPlan& plan);

// The figures a child measures (not config, plan, outcome, RSS: the parent knows those).
json figures_to_json(const SweepRow& row);
void figures_from_json(const json& j, SweepRow& row);

json quality_to_json(const engine::KvQualityResult& q);
engine::KvQualityResult quality_from_json(const json& j);

json config_to_json(const SweepConfig& c);

}  // namespace keel::sweep
