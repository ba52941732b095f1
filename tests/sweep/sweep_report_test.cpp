// Rows from children's JSON lines and exit status, baseline marks, and the renderers.
#include <gtest/gtest.h>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "sweep/sweep_report.h"

namespace keel::sweep {
namespace {

const char* kPlanFits =
    R"({"plan":{"fits":true,"total_bytes":1048576,"limit_bytes":8589934592,"weights_bytes":1000,"kv_bytes":2000,"workspace_bytes":3000}})";

ChildResult exited(int code, std::string out, std::string err = "") {
  ChildResult r;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  r.peak_rss_bytes = 4096;
  return r;
}

std::string result_line(const std::string& text, int generated) {
  return R"({"result":{"prompt_tokens":12,"generated_tokens":)" + std::to_string(generated) +
         R"(,"prefill_tps":100.5,"gen_tps":20.25,"ttft_seconds":0.12,"text":")" + text + "\"}}\n";
}

TEST(SweepReport, OutcomesFromChildren) {
  const SweepConfig c;
  const SweepRow ok = row_from_child(c, exited(0, std::string(kPlanFits) + "\nlog noise\n" + result_line("abc", 8)), 60);
  EXPECT_EQ(ok.outcome, Outcome::kOk);
  EXPECT_TRUE(ok.plan.known && ok.plan.fits);
  EXPECT_EQ(ok.plan.kv_bytes, 2000u);
  EXPECT_EQ(ok.generated_tokens, 8);
  EXPECT_EQ(ok.prompt_tokens, 12);
  EXPECT_EQ(ok.text, "abc");

  const SweepRow refused = row_from_child(
      c, exited(3, R"({"plan":{"fits":false,"total_bytes":9,"limit_bytes":1}})" "\n" R"({"refused":"needs 9 B"})" "\n"), 60);
  EXPECT_EQ(refused.outcome, Outcome::kRefused);
  EXPECT_FALSE(refused.plan.fits);
  EXPECT_EQ(refused.detail, "needs 9 B");

  ChildResult crashed = exited(-1, std::string(kPlanFits) + "\n{\"result\": trunc");
  crashed.signal = SIGSEGV;
  const SweepRow sig = row_from_child(c, crashed, 60);
  EXPECT_EQ(sig.outcome, Outcome::kSignal);
  EXPECT_TRUE(sig.plan.fits);  // the plan came before the crash
  EXPECT_EQ(sig.detail, "killed by SIGSEGV");

  ChildResult hung = exited(-1, "");
  hung.timed_out = true;
  hung.signal = SIGKILL;
  EXPECT_EQ(row_from_child(c, hung, 5).outcome, Outcome::kTimeout);

  const SweepRow err = row_from_child(c, exited(1, R"({"error":"bad model"})" "\n"), 60);
  EXPECT_EQ(err.outcome, Outcome::kError);
  EXPECT_EQ(err.detail, "bad model");

  const SweepRow silent = row_from_child(c, exited(2, "", "keel: flag soup\nlast words\n"), 60);
  EXPECT_EQ(silent.outcome, Outcome::kError);
  EXPECT_EQ(silent.detail, "exited with code 2: last words");
}

TEST(SweepReport, BaselineAndRenderers) {
  SweepReport rep;
  rep.model = "m.gguf";
  rep.n_predict = 8;
  SweepConfig q8;
  q8.k_type = q8.v_type = tensor::DType::kQ8_0;
  rep.rows.push_back(row_from_child({}, exited(0, std::string(kPlanFits) + "\n" + result_line("same", 8)), 60));
  rep.rows.push_back(row_from_child(q8, exited(0, std::string(kPlanFits) + "\n" + result_line("other", 8)), 60));
  rep.rows.push_back(row_from_child(q8, exited(1, R"({"error":"a | b"})" "\n"), 60));
  engine::KvQualityResult q;
  q.types = {tensor::DType::kQ8_0, tensor::DType::kQ8_0};
  q.mean_kl = 0.25;
  q.top1_agreement = 0.5;
  q.first_divergence = 3;
  q.degraded = true;
  rep.rows[1].quality = q;
  rep.quality_baseline = engine::KvTypePair{tensor::DType::kF32, tensor::DType::kF32};
  mark_baseline(rep);
  EXPECT_EQ(rep.rows[0].same_as_baseline, true);
  EXPECT_EQ(rep.rows[1].same_as_baseline, false);
  EXPECT_FALSE(rep.rows[2].same_as_baseline.has_value());

  const std::string md = render_markdown(rep);
  EXPECT_NE(md.find("| 2 | on | q8_0 | q8_0 | 4096 | 1 | fits: 1.00 MiB of 8.00 GiB | ok | 12 | 8 | 100.5 | 20.25 |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("error: a \\| b"), std::string::npos) << md;  // cells escape '|'
  EXPECT_NE(md.find("KL 0.25, top-1 50%, diverges @3 (DEGRADED)"), std::string::npos) << md;

  const auto j = nlohmann::json::parse(render_json(rep));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["outcome"], "ok");
  EXPECT_EQ(j["rows"][1]["config"]["ctk"], "q8_0");
  EXPECT_EQ(j["rows"][1]["kv_quality"]["first_divergence"], 3);
  EXPECT_EQ(j["rows"][2]["outcome"], "error");
  EXPECT_TRUE(j["rows"][2]["same_as_baseline"].is_null());

  const std::string csv = render_csv(rep);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
  EXPECT_NE(csv.find("\"a | b\""), std::string::npos);
}

}  // namespace
}  // namespace keel::sweep
