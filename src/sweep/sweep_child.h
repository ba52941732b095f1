// The child side of `keel sweep`: one configuration in one fresh process. It prints the
// memory plan's verdict before anything big is allocated, then either a refusal or the
// run's figures, as JSON lines (sweep_json.h) on `out`; logs go to stderr.
//
// Contract:
//  - run_config() loads the model with the configuration, reports {"plan"}; when the plan
//    does not fit it reports {"refused"} and returns 3 without allocating the KV cache.
//    Otherwise it starts the engine behind the server's EngineService, submits the
//    prompt n_parallel times at once (greedy, seed 0) and reports {"result"}: tokens of
//    request 0, prefill / generation rates, time to first token, request 0's text and
//    whether every slot produced it. With stream_check, the same request also goes
//    through HTTP streamed and not (stream_check.h). Returns 0; a keel::Error becomes an
//    {"error"} line and 1.
//  - Fault injection for tests: when KEEL_SWEEP_CRASH is a non-empty substring of the
//    configuration's label, the child raises SIGSEGV after the engine started (a crash
//    mid-run); KEEL_SWEEP_HANG likewise makes it sleep until killed (a hang).
//  - run_quality() measures engine::measure_kv_quality for the pairs and reports
//    {"quality"}; a keel::Error becomes {"error"} and 1.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/kv_quality.h"
#include "sweep/sweep_config.h"

namespace keel::sweep {

struct RunSpec {
  std::string model;
  std::string prompt_file;
  SweepConfig config;
  int32_t n_predict = 64;
  uint64_t mem_limit_bytes = 0;  // 0: the machine's available memory
  int32_t threads = 0;
  int32_t batch_tokens = 512;
  bool ignore_eos = true;  // a fixed token count makes rows comparable
  bool stream_check = false;
};

int run_config(const RunSpec& spec, std::FILE* out);

struct QualitySpec {
  std::string model;
  std::string prompt_file;
  std::vector<engine::KvTypePair> pairs;
  engine::KvQualityOptions options;
  int32_t max_prompt_tokens = 512;  // the prompt's first tokens: KL needs positions, not length
};

int run_quality(const QualitySpec& spec, std::FILE* out);

// The whole file; throws keel::Error(kIo) naming it.
std::string read_text_file(const std::string& path);

}  // namespace keel::sweep
