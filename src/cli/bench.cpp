// keel bench — llama-bench-like throughput figures (pp / tg tokens/s, mean ± sd over
// repetitions after a warm-up) and, with --roofline, this machine's limits and the bounds
// they put on the model. docs/PERFORMANCE.md records the figures and commands.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench_roofline.h"
#include "cli/bench_runner.h"
#include "cli/command.h"
#include "core/cpu.h"
#include "core/error.h"
#include "core/large_buffer.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/matmul_path.h"
#include "kernels/qmatmul.h"
#include "model/model.h"

namespace keel::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::vector<int64_t> n_prompt{512};
  std::vector<int64_t> n_gen{128};
  std::vector<int64_t> depth{0};
  std::vector<int64_t> parallel{1};
  std::vector<int64_t> prompt_gen;  // -pg pp,tg: pairs, flattened
  std::vector<int> threads{2};
  int64_t n_batch = 2048;  // llama-bench's logical batch; a forward takes min(n_batch, n_ubatch)
  int64_t n_ubatch = 512;
  int reps = 5;
  std::string flash_attn = "on";
  std::string type_k = "f16";
  std::string type_v = "f16";
  std::string output = "md";
  bool roofline = false;
  bool with_bounds = false;  // each row also against the roofline probed just before and after it
  bool interleave = false;   // the rows' repetitions taken in turns (run_bench_tests_interleaved)
  int64_t roofline_mib = 1024;  // read-probe buffer; far beyond L3 (32 MiB here)
};

// Bounds on the flags (a typo must not ask for a million threads or a terabyte of cache).
constexpr int kMaxThreads = 1024;
constexpr int64_t kMaxTokens = int64_t{1} << 24;

struct ModelFacts {
  std::string file, type;
  uint64_t size_bytes = 0, n_params = 0;
  double size_gib = 0, params_b = 0;
};

// What a row was measured with beyond the options shared by every row.
struct RowContext {
  int threads = 0;
  std::string test_time;  // ISO 8601 UTC, when the row started
};

// A row's bound from the probes taken just before and just after it (--with-bounds): on a
// machine whose memory bandwidth drifts (a VM's neighbours), the bound of the same minutes.
struct RowBound {
  bool set = false;
  double read_gbs_before = 0, read_gbs_after = 0;
  double bound_ts = 0;  // see row_bound_ts
  double fraction = 0;  // avg_ts / bound_ts
};

ModelFacts model_facts(const model::Model& m) {
  ModelFacts f;
  f.file = m.file().path();
  f.file = f.file.substr(f.file.find_last_of('/') + 1);
  std::map<std::string, uint64_t> bytes_by_type;
  uint64_t bytes = 0, params = 0;
  for (const auto& t : m.file().tensors()) {
    bytes += t.n_bytes;
    params += static_cast<uint64_t>(t.n_elements());
    bytes_by_type[tensor::dtype_name(t.type)] += t.n_bytes;
  }
  uint64_t best = 0;
  for (const auto& [name, b] : bytes_by_type) {
    if (b > best) best = b, f.type = name;
  }
  f.size_bytes = bytes;
  f.n_params = params;
  f.size_gib = double(bytes) / double(1ull << 30);
  f.params_b = double(params) / 1e9;
  return f;
}

// Resident set of this process in MiB (0 where /proc is missing).
double resident_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? double(resident) * double(sysconf(_SC_PAGESIZE)) / 1048576.0 : 0;
}

tensor::DType parse_type(const std::string& name, const char* flag) {
  const auto t = tensor::dtype_from_name(name);
  if (!t) throw Error(ErrorCode::kInvalidArgument, std::string(flag) + ": unknown KV type '" + name + "'");
  return *t;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The tests of one thread count: per depth, the prompts, the generations (each at every
// --parallel), then the -pg pairs.
std::vector<BenchTest> plan_tests(const BenchOptions& o) {
  std::vector<BenchTest> tests;
  for (int64_t d : o.depth) {
    for (int64_t p : o.n_prompt) {
      if (p > 0) tests.push_back({p, 0, d, 1});
    }
    for (int64_t n : o.n_gen) {
      if (n <= 0) continue;
      for (int64_t par : o.parallel) tests.push_back({0, n, d, par});
    }
    for (size_t i = 0; i + 1 < o.prompt_gen.size(); i += 2) {
      if (o.prompt_gen[i] + o.prompt_gen[i + 1] > 0) tests.push_back({o.prompt_gen[i], o.prompt_gen[i + 1], d, 1});
    }
  }
  return tests;
}

// llama-bench's field names where it has the quantity (model_size in bytes, avg_ns, ...),
// so its comparison scripts read these rows; keel's own beside them.
nlohmann::json row_json(const ModelFacts& f, const BenchOptions& o, const BenchResult& r, const RowBound& rb,
                        const RowContext& c) {
  nlohmann::json j = {{"model_filename", f.file},
          {"model_type", f.type},
          {"model_size", f.size_bytes},
          {"model_n_params", f.n_params},
          {"model_size_gib", f.size_gib},
          {"model_n_params_b", f.params_b},
          {"backends", "CPU"},
          {"n_batch", o.n_batch},
          {"n_ubatch", o.n_ubatch},
          {"n_threads", c.threads},
          {"flash_attn", o.flash_attn == "on"},
          {"type_k", o.type_k},
          {"type_v", o.type_v},
          {"n_parallel", r.test.n_parallel},
          {"test", r.test.name()},
          {"n_prompt", r.test.n_prompt},
          {"n_gen", r.test.n_gen},
          {"n_depth", r.test.n_depth},
          {"avg_ts", r.avg_ts()},
          {"stddev_ts", r.stddev_ts()},
          {"samples_ts", r.samples_ts},
          {"avg_ns", r.avg_ns()},
          {"stddev_ns", r.stddev_ns()},
          {"samples_ns", r.samples_ns},
          {"test_time", c.test_time},
          {"avg_cpu_ts", r.avg_cpu_ts()},
          {"samples_cpu_ts", r.samples_cpu_ts},
          {"isa", kernels::q::isa_name(kernels::q::best_isa())},
          {"matmul_path", kernels::matmul_path_name(kernels::matmul_path())},
          {"cpu_info", cpu_features().describe()}};
  if (rb.set) {
    j["read_gbs_before"] = rb.read_gbs_before;
    j["read_gbs_after"] = rb.read_gbs_after;
    j["bound_ts"] = rb.bound_ts;
    j["bound_fraction"] = rb.fraction;
  }
  return j;
}

void print_md_header(bool bounds) {
  std::printf("| model | size | params | isa | threads | fa | ctk/ctv | test | t/s | t/s (cpu) |%s\n",
              bounds ? " read GB/s before, after | bound t/s | of bound |" : "");
  std::printf("| --- | ---: | ---: | --- | ---: | --- | --- | --- | ---: | ---: |%s\n", bounds ? " ---: | ---: | ---: |" : "");
}

void print_row(const ModelFacts& f, const BenchOptions& o, const BenchResult& r, const RowBound& rb,
               const RowContext& c, bool first) {
  if (o.output == "json") {
    std::printf("%s%s", first ? "[\n" : ",\n", row_json(f, o, r, rb, c).dump().c_str());
  } else if (o.output == "jsonl") {
    std::printf("%s\n", row_json(f, o, r, rb, c).dump().c_str());
  } else if (o.output == "csv") {
    if (first) {
      std::printf("model_filename,model_type,model_size,model_n_params,n_batch,n_ubatch,n_threads,flash_attn,type_k,"
                  "type_v,n_parallel,test,n_prompt,n_gen,n_depth,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts,"
                  "avg_cpu_ts%s\n",
                  rb.set ? ",read_gbs_before,read_gbs_after,bound_ts,bound_fraction" : "");
    }
    std::printf("%s,%s,%llu,%llu,%lld,%lld,%d,%d,%s,%s,%lld,%s,%lld,%lld,%lld,%s,%.0f,%.0f,%.3f,%.3f,%.3f",
                f.file.c_str(), f.type.c_str(), (unsigned long long)f.size_bytes, (unsigned long long)f.n_params,
                (long long)o.n_batch, (long long)o.n_ubatch, c.threads, o.flash_attn == "on", o.type_k.c_str(),
                o.type_v.c_str(), (long long)r.test.n_parallel, r.test.name().c_str(), (long long)r.test.n_prompt,
                (long long)r.test.n_gen, (long long)r.test.n_depth, c.test_time.c_str(), r.avg_ns(), r.stddev_ns(),
                r.avg_ts(), r.stddev_ts(), r.avg_cpu_ts());
    if (rb.set) std::printf(",%.2f,%.2f,%.3f,%.4f", rb.read_gbs_before, rb.read_gbs_after, rb.bound_ts, rb.fraction);
    std::printf("\n");
  } else {
    if (first) print_md_header(rb.set);
    std::printf("| %s %s | %.2f GiB | %.2f B | %s | %d | %s | %s/%s | %s | %.2f ± %.2f | %.2f |", f.file.c_str(),
                f.type.c_str(), f.size_gib, f.params_b, kernels::q::isa_name(kernels::q::best_isa()), c.threads,
                o.flash_attn.c_str(), o.type_k.c_str(), o.type_v.c_str(), r.test.name().c_str(), r.avg_ts(),
                r.stddev_ts(), r.avg_cpu_ts());
    if (rb.set) {
      std::printf(" %.1f, %.1f | %.1f | %.0f%% |", rb.read_gbs_before, rb.read_gbs_after, rb.bound_ts, 100 * rb.fraction);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

// The bound a row is held to: a pp row, the peak of its arithmetic path over its FLOPs; a
// tg row, the weights read once per step at the probe's bandwidth for all N sequences,
// capped by that compute peak. The K/V bytes a depth row also reads are not counted, so
// its bound is the depth-0 one.
double row_bound_ts(const BenchTest& t, const ModelBounds& b) {
  if (t.n_prompt > 0) return b.pp_bound_ts;
  const double by_memory = b.tg_bound_ts * static_cast<double>(t.n_parallel);
  // A peak of 0 means this machine has no probe for the path: the memory bound stands alone.
  return b.pp_bound_ts > 0 ? std::min(by_memory, b.pp_bound_ts) : by_memory;
}

// Runs test t between two roofline probes; the bound is the mean of the two machines'.
BenchResult run_between_probes(const model::Model& m, ThreadPool& pool, const BenchTest& t, const BenchSettings& s,
                               const BenchOptions& o, RowBound& rb) {
  RooflineOptions ro;
  ro.read_bytes = static_cast<size_t>(o.roofline_mib) << 20;
  const MachineRoofline before = measure_machine(pool, ro);
  BenchResult r = run_bench_test(m, pool, t, s);
  const MachineRoofline after = measure_machine(pool, ro);
  MachineRoofline mean = before;
  mean.read_gbs = (before.read_gbs + after.read_gbs) / 2;
  mean.int8_tops = (before.int8_tops + after.int8_tops) / 2;
  mean.bf16_tflops = (before.bf16_tflops + after.bf16_tflops) / 2;
  mean.f32_tflops = (before.f32_tflops + after.f32_tflops) / 2;
  rb.set = true;
  rb.read_gbs_before = before.read_gbs;
  rb.read_gbs_after = after.read_gbs;
  rb.bound_ts = row_bound_ts(t, model_bounds(m, mean));
  rb.fraction = rb.bound_ts > 0 ? r.avg_ts() / rb.bound_ts : 0;
  return r;
}

int run_roofline(const model::Model& m, ThreadPool& pool, const BenchOptions& o) {
  RooflineOptions ro;
  ro.read_bytes = static_cast<size_t>(o.roofline_mib) << 20;
  const MachineRoofline mr = measure_machine(pool, ro);
  const ModelBounds b = model_bounds(m, mr);
  if (o.output == "json") {
    nlohmann::json j = {{"n_threads", mr.threads},         {"read_gbs", mr.read_gbs},
                        {"read_clean_passes", mr.read_clean_passes()}, {"read_passes_gbs", mr.read_passes_gbs},
                        {"read_passes_clean", mr.read_passes_clean},
                        {"int8_tops", mr.int8_tops},        {"bf16_tflops", mr.bf16_tflops},
                        {"f32_tflops", mr.f32_tflops},      {"model_filename", model_facts(m).file},
                        {"weight_bytes_per_token", b.weight_bytes_per_token},
                        {"flops_per_token", b.flops_per_token}, {"tg_bound_ts", b.tg_bound_ts},
                        {"pp_bound_ts", b.pp_bound_ts},     {"pp_path", b.pp_path}};
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  std::printf("| threads | read GB/s | int8 TOPS | bf16 TFLOPS | f32 TFLOPS | weight MB/token | GFLOP/token | tg_bound_ts | pp_bound_ts (%s) |\n",
              b.pp_path.c_str());
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::printf("| %d | %.1f | %.3f | %.3f | %.3f | %.1f | %.2f | %.1f | %.1f |\n", mr.threads, mr.read_gbs, mr.int8_tops,
              mr.bf16_tflops, mr.f32_tflops, b.weight_bytes_per_token / 1e6, b.flops_per_token / 1e9, b.tg_bound_ts,
              b.pp_bound_ts);
  return 0;
}

// Every flag checked before the model loads or a row runs: a bad value in a list must not
// cost a load, nor leave a half-printed table behind. Returns the run settings they give.
BenchSettings validate(const BenchOptions& o) {
  auto fail = [](const std::string& why) { throw Error(ErrorCode::kInvalidArgument, "bench: " + why); };
  if (o.threads.empty()) fail("-t needs a thread count");
  for (int t : o.threads) {
    if (t < 1 || t > kMaxThreads) fail("-t " + std::to_string(t) + " is outside [1, " + std::to_string(kMaxThreads) + "]");
  }
  if (o.reps < 1) fail("-r must be >= 1");
  if (o.output != "md" && o.output != "json" && o.output != "jsonl" && o.output != "csv") {
    fail("-o must be md, json, jsonl or csv, not '" + o.output + "'");
  }
  if (o.prompt_gen.size() % 2 != 0) fail("-pg takes pairs: prompt,generated");
  auto check_list = [&](const std::vector<int64_t>& v, const char* flag, int64_t lo) {
    for (int64_t x : v) {
      if (x < lo || x > kMaxTokens) {
        fail(std::string(flag) + " " + std::to_string(x) + " is outside [" + std::to_string(lo) + ", " +
             std::to_string(kMaxTokens) + "]");
      }
    }
  };
  check_list(o.n_prompt, "-p", 0);
  check_list(o.n_gen, "-n", 0);
  check_list(o.depth, "-d", 0);
  check_list(o.parallel, "--parallel", 1);
  check_list(o.prompt_gen, "-pg", 0);
  check_list({o.n_batch}, "-b", 1);
  check_list({o.n_ubatch}, "-ub", 1);
  BenchSettings s;
  s.flash_attention = o.flash_attn == "on";
  s.type_k = parse_type(o.type_k, "-ctk");
  s.type_v = parse_type(o.type_v, "-ctv");
  s.reps = o.reps;
  s.n_ubatch = std::min(o.n_batch, o.n_ubatch);
  if (!o.roofline && plan_tests(o).empty()) fail("nothing to measure (every -p and -n is 0)");
  if (o.interleave && o.with_bounds) fail("--interleave and --with-bounds do not combine (the bounds are probed around each row)");
  return s;
}

int run_bench(const BenchOptions& o) {
  const BenchSettings s = validate(o);
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ThreadPool pool(o.threads.front());
  model::Model m(o.model);
  const double rss_mapped = resident_mib();
  const model::PrepareStats ps = m.prepare_weights(pool);
  const double load_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::fprintf(stderr,
               "keel bench: %s ready in %.0f ms (float matrices copied out of the mapping: %.1f MiB; packing %lld "
               "matrices, %.1f MiB: %.0f ms; released %.1f MiB of mapped originals; RSS %.1f MiB before packing, "
               "%.1f MiB after, %.1f MiB of it on huge pages, THP '%s'); isa %s, matmul %s\n",
               o.model.c_str(), load_ms, m.resident_bytes() / 1048576.0, static_cast<long long>(ps.matrices_packed),
               ps.packed_bytes / 1048576.0, ps.seconds * 1000, ps.released_bytes / 1048576.0, rss_mapped, resident_mib(),
               std::max<int64_t>(0, anon_huge_page_bytes()) / 1048576.0, transparent_huge_pages_mode().c_str(),
               kernels::q::isa_name(kernels::q::best_isa()), kernels::matmul_path_name(kernels::matmul_path()));
  if (o.roofline) return run_roofline(m, pool, o);

  const ModelFacts facts = model_facts(m);
  bool first = true;
  for (int threads : o.threads) {
    // The packed weights do not depend on the thread count: one load serves every pool.
    std::unique_ptr<ThreadPool> own;
    if (threads != pool.size()) own = std::make_unique<ThreadPool>(threads);
    ThreadPool& p = own ? *own : pool;
    if (o.interleave) {
      const RowContext c{threads, utc_now_iso8601()};
      for (const BenchResult& r : run_bench_tests_interleaved(m, p, plan_tests(o), s)) {
        print_row(facts, o, r, RowBound{}, c, first);
        first = false;
      }
      continue;
    }
    for (const BenchTest& t : plan_tests(o)) {
      RowBound rb;
      RowContext c{threads, utc_now_iso8601()};
      const BenchResult r = o.with_bounds ? run_between_probes(m, p, t, s, o, rb) : run_bench_test(m, p, t, s);
      print_row(facts, o, r, rb, c, first);
      first = false;
    }
  }
  if (o.output == "json" && !first) std::printf("\n]\n");
  return 0;
}

CommandRegistrar reg("bench", "Measure prompt/generation throughput (llama-bench style) or the roofline", [](CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  app.add_option("-m,--model", o->model, "GGUF model")->required();
  app.add_option("-p,--n-prompt", o->n_prompt, "prompt tokens (comma list; 0 skips)")->delimiter(',');
  app.add_option("-n,--n-gen", o->n_gen, "generated tokens (comma list; 0 skips)")->delimiter(',');
  app.add_option("-d,--depth", o->depth, "tokens already in the cache (comma list)")->delimiter(',');
  app.add_option("--parallel", o->parallel, "concurrent generating sequences (comma list)")->delimiter(',');
  app.add_option("--pg", o->prompt_gen, "prompt,generated: one test of both, timed together (pairs; repeatable)")
      ->delimiter(',');
  app.add_option("-t,--threads", o->threads, "threads (comma list)")->delimiter(',');
  app.add_option("-b,--batch-size", o->n_batch, "logical batch (a forward takes at most min(-b, -ub) prompt tokens)");
  app.add_option("--ub,--ubatch-size", o->n_ubatch, "physical batch: most prompt tokens per forward");
  app.add_option("-r,--repetitions", o->reps, "timed repetitions after one warm-up");
  // llama-bench's spellings too: 1/0 (older builds) and auto (keel's flash path takes every model).
  app.add_option("--fa,--flash-attn", o->flash_attn, "on|off (also 1|0|auto)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, std::string>{
          {"on", "on"}, {"off", "off"}, {"1", "on"}, {"0", "off"}, {"auto", "on"}}));
  app.add_option("--ctk,--cache-type-k", o->type_k, "K cache type");
  app.add_option("--ctv,--cache-type-v", o->type_v, "V cache type");
  app.add_option("-o,--output", o->output, "md|json|jsonl|csv")->check(CLI::IsMember({"md", "json", "jsonl", "csv"}));
  app.add_flag("--roofline", o->roofline, "measure bandwidth and dot-product peaks, print the model's bounds");
  app.add_flag("--with-bounds", o->with_bounds,
               "probe the roofline just before and after each row; print its bound and the fraction reached");
  app.add_flag("--interleave", o->interleave,
               "take the rows' repetitions in turns (each row prepared and warmed first), so a slow spell "
               "of the machine hits every row alike: for ratios between rows");
  app.add_option("--roofline-mib", o->roofline_mib, "read-probe buffer in MiB (keep it far beyond the L3)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  return [o] { return run_bench(*o); };
});

}  // namespace
}  // namespace keel::cli
