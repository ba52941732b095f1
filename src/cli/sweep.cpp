// `keel sweep`: one boot per configuration, same prompt, a table of what happened
// (issue 9, incident 000). Each configuration runs in a fresh child process — this very
// binary re-executed as the hidden `keel sweep-child` — with its own timeout, so a
// crash, an out-of-memory kill or a hang ends that row, not the sweep.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/error.h"
#include "engine/memory_plan.h"
#include "sweep/child_process.h"
#include "sweep/sweep_child.h"
#include "sweep/sweep_json.h"
#include "sweep/sweep_report.h"

namespace keel::cli {
namespace {

using sweep::SweepConfig;

struct SweepOptions {
  std::string model;
  std::string prompt_file;
  std::string fa = "on";
  std::string ctk = "f16";
  std::string ctv;  // empty: V follows K
  std::string ctx = "4096";
  std::string parallel = "1";
  std::string configs;
  int32_t n_predict = 64;
  std::string stream = "off";
  std::string mem_limit;
  double timeout = 600;
  std::string format = "md";
  std::string json_out;
  int32_t baseline = 1;
  int32_t threads = 0;
  bool kv_quality = false;
  std::string kv_baseline = "f32";
  int32_t kv_quality_prompt = 512;
};

std::vector<SweepConfig> configurations(const SweepOptions& o) {
  sweep::SweepAxes axes;
  axes.flash_attention = sweep::parse_on_off_list(o.fa, "--fa");
  axes.k_types = sweep::parse_type_list(o.ctk, "--ctk");
  if (!o.ctv.empty()) axes.v_types = sweep::parse_type_list(o.ctv, "--ctv");
  axes.contexts = sweep::parse_int_list(o.ctx, "--ctx");
  axes.parallel = sweep::parse_int_list(o.parallel, "--np");
  if (o.configs.empty()) return sweep::expand(axes);
  // Axis flags given alongside --configs supply the defaults of keys a row leaves out.
  return sweep::parse_configs(o.configs, sweep::expand(axes).front());
}

std::vector<std::string> child_argv(const SweepOptions& o, const SweepConfig& c, bool stream_check) {
  std::vector<std::string> argv = {"/proc/self/exe", "sweep-child", "--mode", "run", "-m", o.model,
                                   "--prompt-file", o.prompt_file, "--config", c.label(), "-n",
                                   std::to_string(o.n_predict), "-t", std::to_string(o.threads)};
  if (!o.mem_limit.empty()) argv.insert(argv.end(), {"--mem-limit", o.mem_limit});
  if (stream_check) argv.push_back("--stream-check");
  return argv;
}

// One child measures every distinct K/V pair against the baseline types.
void attach_kv_quality(const SweepOptions& o, sweep::SweepReport& report, const sweep::ChildOptions& child) {
  const auto base_type = tensor::dtype_from_name(o.kv_baseline);
  if (!base_type) throw Error(ErrorCode::kInvalidArgument, "--kv-baseline: unknown type '" + o.kv_baseline + "'");
  std::set<std::string> seen;
  std::string pairs;
  for (const sweep::SweepRow& r : report.rows) {
    const engine::KvTypePair p{r.config.k_type, r.config.v_type};
    if (seen.insert(p.name()).second) pairs += (pairs.empty() ? "" : ",") + p.name();
  }
  std::vector<std::string> argv = {"/proc/self/exe", "sweep-child", "--mode", "quality", "-m", o.model,
                                   "--prompt-file", o.prompt_file, "--pairs", pairs, "-n",
                                   std::to_string(o.n_predict), "-t", std::to_string(o.threads),
                                   "--kv-baseline", o.kv_baseline, "--fa", report.rows.front().config.flash_attention ? "on" : "off",
                                   "--max-prompt", std::to_string(o.kv_quality_prompt)};
  std::fprintf(stderr, "keel sweep: KV quality of %s vs %s/%s ...\n", pairs.c_str(), o.kv_baseline.c_str(),
               o.kv_baseline.c_str());
  const sweep::ChildResult res = sweep::run_child(argv, child);
  report.quality_baseline = engine::KvTypePair{*base_type, *base_type};
  std::map<std::string, engine::KvQualityResult> by_pair;
  for (size_t begin = 0; begin < res.out.size();) {
    const size_t end = res.out.find('\n', begin);
    const sweep::json j = sweep::json::parse(res.out.substr(begin, end - begin), nullptr, false);
    begin = end == std::string::npos ? res.out.size() : end + 1;
    if (!j.is_object()) continue;
    if (j.contains("error")) std::fprintf(stderr, "keel sweep: KV quality failed: %s\n", j["error"].dump().c_str());
    if (!j.contains("quality")) continue;
    for (const sweep::json& q : j["quality"]) {
      const engine::KvQualityResult r = sweep::quality_from_json(q);
      by_pair[r.types.name()] = r;
    }
  }
  if (by_pair.empty() && (res.signal || res.timed_out)) {
    std::fprintf(stderr, "keel sweep: KV quality child %s\n",
                 res.timed_out ? "timed out" : ("killed by " + sweep::signal_name(res.signal)).c_str());
  }
  for (sweep::SweepRow& r : report.rows) {
    auto it = by_pair.find(engine::KvTypePair{r.config.k_type, r.config.v_type}.name());
    if (it != by_pair.end()) r.quality = it->second;
  }
}

int run_sweep(const SweepOptions& o) {
  const std::vector<SweepConfig> configs = configurations(o);
  if (o.baseline < 1 || static_cast<size_t>(o.baseline) > configs.size()) {
    throw Error(ErrorCode::kInvalidArgument, "--baseline " + std::to_string(o.baseline) + ": there are " +
                                                 std::to_string(configs.size()) + " configurations");
  }
  if (!o.mem_limit.empty()) engine::parse_byte_size(o.mem_limit);  // reject bad text before any boot
  sweep::read_text_file(o.prompt_file);
  const bool stream_check = sweep::parse_on_off_list(o.stream, "--stream") != std::vector<bool>{false};

  sweep::SweepReport report;
  report.model = o.model;
  report.prompt_file = o.prompt_file;
  report.n_predict = o.n_predict;
  report.baseline_index = static_cast<size_t>(o.baseline - 1);
  sweep::ChildOptions child;
  child.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout * 1000.0));
  for (size_t i = 0; i < configs.size(); ++i) {
    std::fprintf(stderr, "keel sweep: [%zu/%zu] %s ...\n", i + 1, configs.size(), configs[i].label().c_str());
    const sweep::ChildResult res = sweep::run_child(child_argv(o, configs[i], stream_check), child);
    report.rows.push_back(sweep::row_from_child(configs[i], res, o.timeout));
    const sweep::SweepRow& row = report.rows.back();
    std::fprintf(stderr, "keel sweep: [%zu/%zu] %s%s%s (%.1f s)\n", i + 1, configs.size(),
                 sweep::outcome_name(row.outcome), row.detail.empty() ? "" : ": ",
                 row.detail.substr(0, 300).c_str(), row.wall_seconds);
  }
  if (o.kv_quality) attach_kv_quality(o, report, child);
  sweep::mark_baseline(report);

  const std::string json_text = sweep::render_json(report);
  if (!o.json_out.empty()) {
    std::ofstream out(o.json_out, std::ios::trunc);
    out << json_text;
    out.close();
    if (!out) throw Error(ErrorCode::kIo, o.json_out + ": cannot write the JSON report");
  }
  const std::string text = o.format == "json"  ? json_text
                           : o.format == "csv" ? sweep::render_csv(report)
                                               : sweep::render_markdown(report);
  std::fputs(text.c_str(), stdout);
  return 0;
}

CommandRunner setup_sweep(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  app.add_option("--prompt-file", o->prompt_file, "the prompt every configuration gets")->required()->check(CLI::ExistingFile);
  app.add_option("--fa,--flash-attn", o->fa, "flash attention values, e.g. on,off")->capture_default_str();
  app.add_option("--ctk,--cache-type-k", o->ctk, "K cache types, e.g. f16,q8_0,q4_0")->capture_default_str();
  app.add_option("--ctv,--cache-type-v", o->ctv, "V cache types (default: the same as K, row by row)");
  app.add_option("-c,--ctx", o->ctx, "context sizes, e.g. 8192,32k")->capture_default_str();
  app.add_option("--np,--parallel", o->parallel, "slot counts, e.g. 1,4 (the prompt is sent np times at once)")->capture_default_str();
  app.add_option("--configs", o->configs, "explicit rows instead of the cross product: \"fa=on,ctk=q8_0,ctv=q8_0,c=8192,np=1;...\"");
  app.add_option("-n,--n-predict", o->n_predict, "tokens to generate per request")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--stream", o->stream, "on,off: also send the request through the HTTP server streamed and not, and compare")
      ->capture_default_str();
  app.add_option("--mem-limit", o->mem_limit, "memory the plan must fit in, e.g. 8G (default: available memory)");
  app.add_option("--timeout", o->timeout, "seconds per configuration before its process group is killed")
      ->capture_default_str()->check(CLI::Range(0.1, 1e6));
  app.add_option("-o,--output", o->format, "table format on stdout: md, json or csv")
      ->capture_default_str()->check(CLI::IsMember({"md", "json", "csv"}));
  app.add_option("--json-out", o->json_out, "also write the JSON report to this file");
  app.add_option("--baseline", o->baseline, "row (1-based) whose text the others are compared with")->capture_default_str();
  app.add_option("-t,--threads", o->threads, "kernel threads per child (0 = all cores)")->check(CLI::Range(0, 1024));
  app.add_flag("--kv-quality", o->kv_quality, "measure each K/V pair against --kv-baseline (KL, top-1, divergence)");
  app.add_option("--kv-baseline", o->kv_baseline, "KV type of the quality baseline (f32 or f16)")->capture_default_str();
  app.add_option("--kv-quality-prompt", o->kv_quality_prompt, "prompt tokens the quality check reads (the file's first)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  return [o] { return run_sweep(*o); };
}

CommandRegistrar sweep_registrar("sweep", "Boot once per configuration (FA, KV types, context, slots) and tabulate what happened",
                                 setup_sweep);

// ---- the child (hidden) ------------------------------------------------------------

struct ChildCommandOptions {
  std::string mode = "run";
  sweep::RunSpec run;
  std::string config;
  std::string mem_limit;
  std::string pairs;
  std::string kv_baseline = "f32";
  std::string fa = "on";
  int32_t max_prompt = 512;
};

// "q8_0/q4_0,f16/f16" → the K/V pairs.
std::vector<engine::KvTypePair> parse_pairs(const std::string& text) {
  std::vector<engine::KvTypePair> pairs;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    const size_t slash = item.find('/');
    const auto k = tensor::dtype_from_name(item.substr(0, slash));
    const auto v = slash == std::string::npos ? std::nullopt : tensor::dtype_from_name(item.substr(slash + 1));
    if (!k || !v) throw Error(ErrorCode::kInvalidArgument, "--pairs: '" + item + "' is not K/V (e.g. q8_0/q8_0)");
    pairs.push_back({*k, *v});
    begin = end + 1;
  }
  return pairs;
}

int run_child_command(ChildCommandOptions& o) {
  if (o.mode == "quality") {
    sweep::QualitySpec q;
    q.model = o.run.model;
    q.prompt_file = o.run.prompt_file;
    q.pairs = parse_pairs(o.pairs);
    const auto base = tensor::dtype_from_name(o.kv_baseline);
    if (!base) throw Error(ErrorCode::kInvalidArgument, "--kv-baseline: unknown type '" + o.kv_baseline + "'");
    q.options.baseline = {*base, *base};
    q.options.n_generate = o.run.n_predict;
    q.options.threads = o.run.threads;
    q.options.flash_attention = o.fa == "on";
    q.max_prompt_tokens = o.max_prompt;
    return sweep::run_quality(q, stdout);
  }
  const std::vector<SweepConfig> one = sweep::parse_configs(o.config, {});
  if (one.size() != 1) throw Error(ErrorCode::kInvalidArgument, "--config: exactly one configuration expected");
  o.run.config = one.front();
  if (!o.mem_limit.empty()) o.run.mem_limit_bytes = engine::parse_byte_size(o.mem_limit);
  return sweep::run_config(o.run, stdout);
}

CommandRunner setup_child(CLI::App& app) {
  app.group("");  // internal: not listed in --help
  auto o = std::make_shared<ChildCommandOptions>();
  app.add_option("--mode", o->mode)->check(CLI::IsMember({"run", "quality"}));
  app.add_option("-m,--model", o->run.model)->required();
  app.add_option("--prompt-file", o->run.prompt_file)->required();
  app.add_option("--config", o->config);
  app.add_option("-n", o->run.n_predict)->check(CLI::Range(1, 1 << 20));
  app.add_option("-t", o->run.threads)->check(CLI::Range(0, 1024));
  app.add_option("--mem-limit", o->mem_limit);
  app.add_flag("--stream-check", o->run.stream_check);
  app.add_option("--pairs", o->pairs);
  app.add_option("--kv-baseline", o->kv_baseline);
  app.add_option("--fa", o->fa);
  app.add_option("--max-prompt", o->max_prompt)->check(CLI::Range(1, 1 << 20));
  return [o] { return run_child_command(*o); };
}

CommandRegistrar child_registrar("sweep-child", "internal: one configuration of keel sweep", setup_child);

}  // namespace
}  // namespace keel::cli
