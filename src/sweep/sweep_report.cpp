#include "sweep/sweep_report.h"

#include <cstdio>
#include <sstream>

#include "engine/memory_plan.h"
#include "sweep/sweep_json.h"

namespace keel::sweep {
namespace {

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return {};
  const size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string cell(std::string s, size_t max = 90) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string plan_cell(const PlanVerdict& p) {
  if (!p.known) return "?";
  using engine::format_bytes;
  if (p.fits) return "fits: " + format_bytes(p.total_bytes) + " of " + format_bytes(p.limit_bytes);
  return "does not fit: " + format_bytes(p.total_bytes) + " > " + format_bytes(p.limit_bytes);
}

std::string outcome_cell(const SweepRow& r) {
  switch (r.outcome) {
    case Outcome::kOk: return r.parallel_same == false ? "ok (slots differ!)" : "ok";
    case Outcome::kRefused: return "refused by plan";
    case Outcome::kError: return "error: " + r.detail;
    case Outcome::kSignal: return r.detail;
    case Outcome::kTimeout: return r.detail;
  }
  return "?";
}

std::string yes_no(const std::optional<bool>& b) { return !b ? "" : (*b ? "yes" : "NO"); }

std::string stream_cell(const SweepRow& r) {
  if (!r.stream) return "";
  std::string s = r.stream->streamed_equals_whole ? "same" : "DIFFERENT";
  s += " (" + std::to_string(r.stream->stream_chunks) + " chunks)";
  if (!r.stream->equals_engine) s += ", != engine";
  return s;
}

std::string quality_cell(const SweepRow& r) {
  if (!r.quality) return "";
  const engine::KvQualityResult& q = *r.quality;
  char kl[32];
  std::snprintf(kl, sizeof kl, "%.3g", q.mean_kl);
  std::string s = std::string("KL ") + kl + ", top-1 " + fixed(100.0 * q.top1_agreement, 0) + "%";
  s += q.first_divergence < 0 ? ", same" : ", diverges @" + std::to_string(q.first_divergence);
  if (q.degraded) s += " (DEGRADED)";
  return s;
}

bool any_stream(const SweepReport& r) {
  for (const SweepRow& row : r.rows) {
    if (row.stream) return true;
  }
  return false;
}

bool any_quality(const SweepReport& r) {
  for (const SweepRow& row : r.rows) {
    if (row.quality) return true;
  }
  return false;
}

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kRefused: return "refused";
    case Outcome::kError: return "error";
    case Outcome::kSignal: return "signal";
    case Outcome::kTimeout: return "timeout";
  }
  return "?";
}

SweepRow row_from_child(const SweepConfig& config, const ChildResult& child, double timeout_seconds) {
  SweepRow row;
  row.config = config;
  row.peak_rss_bytes = child.peak_rss_bytes;
  row.wall_seconds = child.wall_seconds;
  std::optional<std::string> refused, error;
  bool have_result = false;
  std::istringstream lines(child.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    try {
      if (j.contains("plan")) row.plan = plan_from_json(j.at("plan"));
      if (j.contains("refused")) refused = j.at("refused").get<std::string>();
      if (j.contains("error")) error = j.at("error").get<std::string>();
      if (j.contains("result")) {
        figures_from_json(j.at("result"), row);
        have_result = true;
      }
    } catch (const std::exception&) {
      // A malformed line is the child's bug; the outcome below still says what happened.
    }
  }
  if (child.timed_out) {
    row.outcome = Outcome::kTimeout;
    row.detail = "timed out after " + fixed(timeout_seconds, 0) + " s (process group killed)";
  } else if (child.signal != 0) {
    row.outcome = Outcome::kSignal;
    row.detail = "killed by " + signal_name(child.signal);
    if (child.signal == 9) row.detail += " (out-of-memory killer?)";
  } else if (refused) {
    row.outcome = Outcome::kRefused;
    row.detail = *refused;
  } else if (error) {
    row.outcome = Outcome::kError;
    row.detail = *error;
  } else if (have_result && child.exit_code == 0) {
    row.outcome = Outcome::kOk;
  } else {
    row.outcome = Outcome::kError;
    const std::string last = last_line(child.err);
    row.detail = "exited with code " + std::to_string(child.exit_code) + (last.empty() ? "" : ": " + last);
  }
  return row;
}

void mark_baseline(SweepReport& report) {
  if (report.baseline_index >= report.rows.size()) return;
  const SweepRow& base = report.rows[report.baseline_index];
  if (base.outcome != Outcome::kOk) return;
  for (SweepRow& row : report.rows) {
    if (row.outcome == Outcome::kOk) row.same_as_baseline = row.text == base.text;
  }
}

std::string render_markdown(const SweepReport& rep) {
  const bool stream = any_stream(rep), quality = any_quality(rep);
  std::string out = "| # | flash attention | K | V | ctx | np | memory plan | outcome | prompt | generated | "
                    "prefill t/s | gen t/s | TTFT s | peak RSS | same text as #" +
                    std::to_string(rep.baseline_index + 1) + " |";
  std::string rule = "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";
  if (stream) out += " stream vs whole |", rule += "---|";
  if (quality) {
    out += " KV vs " + (rep.quality_baseline ? rep.quality_baseline->name() : std::string("baseline")) + " |";
    rule += "---|";
  }
  out += "\n" + rule + "\n";
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const SweepRow& r = rep.rows[i];
    const bool ok = r.outcome == Outcome::kOk;
    out += "| " + std::to_string(i + 1) + " | " + (r.config.flash_attention ? "on" : "off") + " | " +
           tensor::dtype_name(r.config.k_type) + " | " + tensor::dtype_name(r.config.v_type) + " | " +
           std::to_string(r.config.n_ctx) + " | " + std::to_string(r.config.n_parallel) + " | " +
           cell(plan_cell(r.plan)) + " | " + cell(outcome_cell(r)) + " | " +
           (r.prompt_tokens >= 0 ? std::to_string(r.prompt_tokens) : "") + " | " +
           (r.generated_tokens >= 0 ? std::to_string(r.generated_tokens) : "") + " | " +
           (ok ? fixed(r.prefill_tps, 1) : "") + " | " + (ok ? fixed(r.gen_tps, 2) : "") + " | " +
           (ok ? fixed(r.ttft_seconds, 2) : "") + " | " +
           (r.peak_rss_bytes > 0 ? engine::format_bytes(static_cast<uint64_t>(r.peak_rss_bytes)) : "") + " | " +
           yes_no(r.same_as_baseline) + " |";
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on " " + temporary.
    if (stream) out.append(" ").append(stream_cell(r)).append(" |");
    if (quality) out.append(" ").append(cell(quality_cell(r))).append(" |");
    out += "\n";
  }
  return out;
}

std::string render_csv(const SweepReport& rep) {
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out =
      "index,flash_attention,ctk,ctv,ctx,parallel,plan_fits,plan_total_bytes,plan_limit_bytes,outcome,detail,"
      "prompt_tokens,generated_tokens,prefill_tps,gen_tps,ttft_seconds,peak_rss_bytes,same_as_baseline,"
      "stream_same,kv_mean_kl,kv_top1,kv_first_divergence\n";
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const SweepRow& r = rep.rows[i];
    out += std::to_string(i + 1) + "," + (r.config.flash_attention ? "on" : "off") + "," +
           tensor::dtype_name(r.config.k_type) + "," + tensor::dtype_name(r.config.v_type) + "," +
           std::to_string(r.config.n_ctx) + "," + std::to_string(r.config.n_parallel) + "," +
           (r.plan.known ? (r.plan.fits ? "yes" : "no") : "") + "," + std::to_string(r.plan.total_bytes) + "," +
           std::to_string(r.plan.limit_bytes) + "," + outcome_name(r.outcome) + "," + quote(r.detail) + "," +
           std::to_string(r.prompt_tokens) + "," + std::to_string(r.generated_tokens) + "," +
           fixed(r.prefill_tps, 3) + "," + fixed(r.gen_tps, 3) + "," + fixed(r.ttft_seconds, 4) + "," +
           std::to_string(r.peak_rss_bytes) + "," + yes_no(r.same_as_baseline) + "," +
           (r.stream ? (r.stream->streamed_equals_whole ? "yes" : "NO") : "") + "," +
           (r.quality ? fixed(r.quality->mean_kl, 6) : "") + "," +
           (r.quality ? fixed(r.quality->top1_agreement, 4) : "") + "," +
           (r.quality ? std::to_string(r.quality->first_divergence) : "") + "\n";
  }
  return out;
}

std::string render_json(const SweepReport& rep) {
  json rows = json::array();
  for (const SweepRow& r : rep.rows) {
    json j = {{"config", config_to_json(r.config)},
              {"outcome", outcome_name(r.outcome)},
              {"detail", r.detail},
              {"peak_rss_bytes", r.peak_rss_bytes},
              {"wall_seconds", r.wall_seconds}};
    j["plan"] = r.plan.known ? plan_to_json(r.plan) : json(nullptr);
    j.update(figures_to_json(r));
    j["same_as_baseline"] = r.same_as_baseline ? json(*r.same_as_baseline) : json(nullptr);
    j["kv_quality"] = r.quality ? quality_to_json(*r.quality) : json(nullptr);
    rows.push_back(std::move(j));
  }
  json out = {{"model", rep.model},
              {"prompt_file", rep.prompt_file},
              {"n_predict", rep.n_predict},
              {"baseline", rep.baseline_index + 1},
              {"rows", std::move(rows)}};
  if (rep.quality_baseline) out["kv_quality_baseline"] = rep.quality_baseline->name();
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace keel::sweep
