// `keel bench` through the built binary on a tiny synthetic model: the rows it prints in
// json, md and csv carry the llama-bench fields and one sample per repetition; --depth and
// --parallel give their own rows; --roofline prints the bounds, --with-bounds a bound per
// row; bad flags exit nonzero
// without a crash. No figure is checked against a speed (only that it is a rate).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu.h"
#include "support/command.h"
#include "support/paths.h"

namespace keel::test {
namespace {

const std::string& tiny_model() {
  static const std::string path = [] {
    const std::string p = temp_dir() + "/bench_tiny_q4_0.gguf";
    const CommandResult r =
        run_command(std::string(KEEL_BIN) + " make-model --preset tiny --type q4_0 -o " + p);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p;
  }();
  return path;
}

CommandResult bench(const std::string& args) {
  return run_command(std::string(KEEL_BIN) + " bench -m " + tiny_model() + " -t 2 " + args);
}

nlohmann::json json_rows(const std::string& args) {
  const CommandResult r = bench(args + " -o json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

void expect_rate_row(const nlohmann::json& row, int reps) {
  for (const char* key : {"test", "n_prompt", "n_gen", "n_depth", "avg_ts", "stddev_ts", "samples_ts",
                          "model_filename", "model_type", "n_threads", "flash_attn", "type_k", "type_v",
                          "n_parallel"}) {
    EXPECT_TRUE(row.contains(key)) << key << " missing in " << row.dump();
  }
  ASSERT_TRUE(row["samples_ts"].is_array());
  ASSERT_EQ(row["samples_ts"].size(), static_cast<size_t>(reps)) << row.dump();
  double sum = 0;
  for (const auto& s : row["samples_ts"]) {
    EXPECT_GT(s.get<double>(), 0.0);
    sum += s.get<double>();
  }
  EXPECT_NEAR(row["avg_ts"].get<double>(), sum / reps, 1e-6 * sum);
  EXPECT_GE(row["stddev_ts"].get<double>(), 0.0);
  EXPECT_EQ(row["model_filename"], "bench_tiny_q4_0.gguf");
  EXPECT_EQ(row["model_type"], "q4_0");
  // llama-bench's names for the same quantities, so its comparison scripts read the rows.
  EXPECT_GT(row["model_size"].get<uint64_t>(), 0u);
  EXPECT_GT(row["model_n_params"].get<uint64_t>(), 0u);
  EXPECT_EQ(row["backends"], "CPU");
  ASSERT_TRUE(row["samples_ns"].is_array());
  ASSERT_EQ(row["samples_ns"].size(), static_cast<size_t>(reps));
  // Each repetition's time and rate describe one run: tokens = rate x seconds, the same for all.
  const double tokens = double(row["n_prompt"].get<int64_t>() + row["n_gen"].get<int64_t>() * row["n_parallel"].get<int64_t>());
  for (int i = 0; i < reps; ++i) {
    EXPECT_NEAR(row["samples_ts"][i].get<double>() * row["samples_ns"][i].get<double>() * 1e-9, tokens, 1e-6 * tokens);
  }
  EXPECT_GT(row["avg_ns"].get<double>(), 0.0);
  EXPECT_GE(row["stddev_ns"].get<double>(), 0.0);
  EXPECT_EQ(row["test_time"].get<std::string>().size(), 20u) << row.dump();  // 2026-12-07T17:08:20Z
}

TEST(BenchCommand, JsonRowsCarryTheFieldsAndOneSamplePerRepetition) {
  const nlohmann::json rows = json_rows("-p 8 -n 4 -r 3");
  ASSERT_TRUE(rows.is_array());
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  expect_rate_row(rows[0], 3);
  expect_rate_row(rows[1], 3);
  EXPECT_EQ(rows[0]["test"], "pp8");
  EXPECT_EQ(rows[0]["n_prompt"], 8);
  EXPECT_EQ(rows[0]["n_gen"], 0);
  EXPECT_EQ(rows[1]["test"], "tg4");
  EXPECT_EQ(rows[1]["n_prompt"], 0);
  EXPECT_EQ(rows[1]["n_gen"], 4);
  EXPECT_EQ(rows[1]["n_depth"], 0);
  EXPECT_EQ(rows[1]["flash_attn"], true);
  EXPECT_EQ(rows[1]["type_k"], "f16");
}

TEST(BenchCommand, DepthAndParallelGiveTheirOwnRows) {
  const nlohmann::json rows = json_rows("-p 0 -n 3 -d 0,20 --parallel 1,3 -r 1 -fa off -ctk q8_0 -ctv q8_0");
  ASSERT_EQ(rows.size(), 4u) << rows.dump();
  const char* names[] = {"tg3", "tg3 x3", "tg3 @ d20", "tg3 @ d20 x3"};
  const int depth[] = {0, 0, 20, 20}, parallel[] = {1, 3, 1, 3};
  for (size_t i = 0; i < 4; ++i) {
    expect_rate_row(rows[i], 1);
    EXPECT_EQ(rows[i]["n_threads"], 2);
    EXPECT_EQ(rows[i]["test"], names[i]);
    EXPECT_EQ(rows[i]["n_depth"], depth[i]);
    EXPECT_EQ(rows[i]["n_parallel"], parallel[i]);
    EXPECT_EQ(rows[i]["flash_attn"], false);
    EXPECT_EQ(rows[i]["type_k"], "q8_0");
    EXPECT_EQ(rows[i]["type_v"], "q8_0");
  }
}

// --interleave takes the repetitions in turns; the rows are the ones a plain run prints, in
// the same order, each with its own samples.
TEST(BenchCommand, InterleavedRepetitionsGiveThePlainRows) {
  const std::string args = "-p 8 -n 3 -d 0,20 --parallel 1,2 -r 2 -ctk q8_0 -ctv q8_0";
  const nlohmann::json plain = json_rows(args);
  const nlohmann::json turns = json_rows(args + " --interleave");
  ASSERT_EQ(plain.size(), 6u) << plain.dump();
  ASSERT_EQ(turns.size(), plain.size()) << turns.dump();
  for (size_t i = 0; i < turns.size(); ++i) {
    expect_rate_row(turns[i], 2);
    for (const char* key : {"test", "n_prompt", "n_gen", "n_depth", "n_parallel", "type_k", "n_threads"}) {
      EXPECT_EQ(turns[i][key], plain[i][key]) << key << " of row " << i;
    }
  }
}

// -pg times a prompt and its generation together; -t takes a list (one set of rows per
// count, one load); -ub cuts prompts and depth prefixes into forwards of that many tokens.
TEST(BenchCommand, PromptGenerationPairsThreadListsAndMicroBatches) {
  const CommandResult r = run_command(std::string(KEEL_BIN) + " bench -m " + tiny_model() +
                                      " -p 40 -n 3 -pg 24,3 -t 1,2 -ub 16 -d 0,20 -r 2 -fa 1 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 12u) << rows.dump();
  const char* names[] = {"pp40", "tg3", "pp24+tg3", "pp40 @ d20", "tg3 @ d20", "pp24+tg3 @ d20"};
  for (size_t i = 0; i < rows.size(); ++i) {
    expect_rate_row(rows[i], 2);
    EXPECT_EQ(rows[i]["test"], names[i % 6]) << i;
    EXPECT_EQ(rows[i]["n_threads"], i < 6 ? 1 : 2) << i;
    EXPECT_EQ(rows[i]["n_ubatch"], 16);
    EXPECT_EQ(rows[i]["flash_attn"], true);
  }
  EXPECT_EQ(rows[2]["n_prompt"], 24);
  EXPECT_EQ(rows[2]["n_gen"], 3);
  // -fa 0 is llama-bench's "off"; jsonl is one object per line.
  const CommandResult jl = bench("-p 8 -n 2 -r 1 -fa 0 -o jsonl");
  ASSERT_EQ(jl.exit_code, 0) << jl.err;
  std::istringstream in(jl.out);
  int n = 0;
  for (std::string l; std::getline(in, l); ++n) {
    const auto row = nlohmann::json::parse(l);
    expect_rate_row(row, 1);
    EXPECT_EQ(row["flash_attn"], false);
  }
  EXPECT_EQ(n, 2) << jl.out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  return out;
}

int count(const std::string& s, char c) { return static_cast<int>(std::count(s.begin(), s.end(), c)); }

TEST(BenchCommand, MarkdownAndCsvTables) {
  const CommandResult md = bench("-p 8 -n 2 -r 1 -o md");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  const auto md_lines = lines(md.out);
  ASSERT_EQ(md_lines.size(), 4u) << md.out;  // header, rule, pp8, tg2
  EXPECT_NE(md_lines[0].find("| test |"), std::string::npos) << md.out;
  EXPECT_NE(md_lines[2].find("pp8"), std::string::npos) << md.out;
  EXPECT_NE(md_lines[3].find("tg2"), std::string::npos) << md.out;
  for (const auto& l : md_lines) EXPECT_EQ(count(l, '|'), count(md_lines[0], '|')) << l;
  // Load-to-ready (packing included) is reported on stderr.
  EXPECT_NE(md.err.find("ready in"), std::string::npos) << md.err;

  const CommandResult csv = bench("-p 8 -n 2 -r 1 -o csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto csv_lines = lines(csv.out);
  ASSERT_EQ(csv_lines.size(), 3u) << csv.out;
  EXPECT_EQ(csv_lines[0].rfind("model_filename,", 0), 0u) << csv.out;
  EXPECT_NE(csv_lines[0].find(",avg_ts,stddev_ts"), std::string::npos) << csv.out;
  for (const auto& l : csv_lines) EXPECT_EQ(count(l, ','), count(csv_lines[0], ',')) << l;
  EXPECT_NE(csv_lines[1].find(",pp8,"), std::string::npos) << csv.out;
  EXPECT_NE(csv_lines[2].find(",tg2,"), std::string::npos) << csv.out;
}

TEST(BenchCommand, RooflinePrintsTheBounds) {
  // A 64 MiB read buffer keeps the test light; the default is 1 GiB.
  const CommandResult md = bench("--roofline --roofline-mib 64");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("tg_bound_ts"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("pp_bound_ts"), std::string::npos) << md.out;

  const CommandResult js = bench("--roofline --roofline-mib 64 -o json");
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_GT(j["read_gbs"].get<double>(), 0.0);
  EXPECT_GT(j["weight_bytes_per_token"].get<double>(), 0.0);
  EXPECT_GT(j["tg_bound_ts"].get<double>(), 0.0);
  // Every pass is listed as a rate, with whether it ran undisturbed beside it; read_gbs is
  // the best clean pass (the best of all when none was clean).
  const auto& passes = j["read_passes_gbs"];
  const auto& clean = j["read_passes_clean"];
  ASSERT_TRUE(passes.is_array() && clean.is_array()) << js.out;
  ASSERT_FALSE(passes.empty());
  ASSERT_EQ(passes.size(), clean.size()) << js.out;
  double best_clean = 0, best_any = 0;
  int n_clean = 0;
  for (size_t i = 0; i < passes.size(); ++i) {
    const double gbs = passes[i].get<double>();
    EXPECT_GT(gbs, 0.0) << "pass " << i << " of " << js.out;
    best_any = std::max(best_any, gbs);
    if (clean[i].get<bool>()) best_clean = std::max(best_clean, gbs), ++n_clean;
  }
  EXPECT_EQ(j["read_clean_passes"].get<int>(), n_clean);
  EXPECT_EQ(j["read_gbs"].get<double>(), n_clean > 0 ? best_clean : best_any);
  // The compute probes are SIMD loops (AVX2 or AVX-512); with KEEL_CPU=scalar there is none.
  const CpuFeatures& cpu = cpu_features();
  if (cpu.avx2 && cpu.fma) {
    EXPECT_GT(j["pp_bound_ts"].get<double>(), 0.0);
  } else {
    EXPECT_EQ(j["pp_bound_ts"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["n_threads"], 2);
}

// --with-bounds: each row carries the probes around it and its bound; the fraction is the
// row's rate over that bound, and a parallel row's bound scales with its sequences (up to
// the compute peak).
TEST(BenchCommand, WithBoundsGivesEachRowItsBoundAndFraction) {
  const nlohmann::json rows = json_rows("-p 8 -n 2 --parallel 1,2 -r 1 --with-bounds --roofline-mib 64");
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  for (const auto& row : rows) {
    expect_rate_row(row, 1);
    for (const char* key : {"read_gbs_before", "read_gbs_after", "bound_ts", "bound_fraction"}) {
      ASSERT_TRUE(row.contains(key)) << key << " missing in " << row.dump();
    }
    EXPECT_GT(row["read_gbs_before"].get<double>(), 0.0);
    EXPECT_GT(row["read_gbs_after"].get<double>(), 0.0);
    const double bound = row["bound_ts"].get<double>();
    // A prompt's bound is the compute probe's, which needs SIMD (none with KEEL_CPU=scalar).
    const CpuFeatures& cpu = cpu_features();
    if (row["n_prompt"].get<int>() > 0 && !(cpu.avx2 && cpu.fma)) {
      EXPECT_EQ(bound, 0.0);
      EXPECT_EQ(row["bound_fraction"].get<double>(), 0.0);
      continue;
    }
    ASSERT_GT(bound, 0.0);
    EXPECT_NEAR(row["bound_fraction"].get<double>(), row["avg_ts"].get<double>() / bound, 1e-9 * bound + 1e-12);
  }
  EXPECT_EQ(rows[0]["test"], "pp8");
  EXPECT_EQ(rows[1]["test"], "tg2");
  EXPECT_EQ(rows[2]["test"], "tg2 x2");
  // Without the flag no row has the fields (the llama-bench columns stay as they were).
  const nlohmann::json plain = json_rows("-p 0 -n 2 -r 1");
  EXPECT_FALSE(plain[0].contains("bound_ts")) << plain.dump();
  const CommandResult md = bench("-p 0 -n 2 -r 1 --with-bounds --roofline-mib 64");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| bound t/s | of bound |"), std::string::npos) << md.out;
}

TEST(BenchCommand, BadFlagsExitNonzeroWithoutCrashing) {
  const std::string bin = std::string(KEEL_BIN) + " bench ";
  const std::string m = " -m " + tiny_model();
  for (const std::string& args : {bin + m + " -o xml", bin + m + " -r 0 -n 2 -p 0", bin + m + " -t 0",
                                  bin + m + " -ctk q9_9 -p 0 -n 2 -r 1", bin + m + " -p abc", bin + m + " -fa maybe",
                                  bin + m + " --parallel 0 -p 0 -n 2 -r 1", bin + m + " -d -5 -p 0 -n 2 -r 1",
                                  bin + " -m /nonexistent.gguf", bin + " -p 8", bin + m + " --roofline-mib 0",
                                  bin + m + " -p -5 -n 0 -r 1", bin + m + " -p 0 -n -1 -r 1", bin + m + " -p 0 -n 0",
                                  bin + m + " -t 100000 -p 4 -n 0", bin + m + " -p 0 -n 2 --parallel 1,0 -r 1",
                                  bin + m + " -pg 8 -r 1", bin + m + " -pg 8,-2 -r 1", bin + m + " -ub 0 -r 1",
                                  bin + m + " -t 2,0 -p 4 -n 0", bin + m + " -p 0 -n 2 -r 1 --interleave --with-bounds"}) {
    const CommandResult r = run_command(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(r.signal, 0) << args << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
  }
  const CommandResult bad_kv = run_command(bin + m + " -ctk q9_9 -p 0 -n 2 -r 1");
  EXPECT_NE(bad_kv.err.find("q9_9"), std::string::npos) << bad_kv.err;
  // A bad entry late in a list fails before any row is measured or printed.
  const CommandResult late = run_command(bin + m + " -p 4 -n 2 --parallel 1,0 -r 1");
  EXPECT_NE(late.exit_code, 0);
  EXPECT_EQ(late.out.find("pp4"), std::string::npos) << late.out;
  EXPECT_NE(late.err.find("--parallel 0"), std::string::npos) << late.err;
}

}  // namespace
}  // namespace keel::test
