#include "sweep/kv_check.h"

#include <cstdio>

#include "core/log.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace keel::sweep {
namespace {

bool quantized(tensor::DType t) { return tensor::traits(t).block_size > 1; }

constexpr int32_t kCheckTokens = 16;  // start-up stays short

}  // namespace

std::optional<engine::KvQualityResult> kv_startup_check(const engine::LoadedModel& loaded,
                                                        const engine::LoadOptions& load) {
  const engine::KvTypePair configured{load.k_type, load.v_type};
  if (!quantized(configured.k) && !quantized(configured.v)) {
    log_info("kv-check: " + configured.name() + " is not a quantized KV cache; nothing to check");
    return std::nullopt;
  }
  try {
    engine::KvQualityOptions o;
    o.n_generate = kCheckTokens;
    o.flash_attention = load.engine.flash_attention;
    o.threads = load.engine.threads;
    const std::vector<int32_t> prompt = loaded.tokenizer->encode(engine::kv_check_prompt(), {});
    const engine::KvQualityReport report =
        engine::measure_kv_quality(*loaded.model, prompt, std::span(&configured, 1), o);
    const engine::KvQualityResult& r = report.results.front();
    const std::string line = "kv-check: " + engine::describe(r, report.baseline);
    if (r.degraded) {
      char limits[128];
      std::snprintf(limits, sizeof limits, " — beyond the limits (mean KL <= %.3g, top-1 >= %.0f%%)", o.max_mean_kl,
                    100.0 * o.min_top1);
      log_warn(line + limits + "; consider -ctk q8_0 -ctv q8_0 or f16");
    } else {
      log_info(line);
    }
    return r;
  } catch (const std::exception& e) {
    log_warn(std::string("kv-check: could not run: ") + e.what());
    return std::nullopt;
  }
}

void KvCheckMetrics::set(const std::optional<engine::KvQualityResult>& result) {
  std::lock_guard<std::mutex> lock(mutex_);
  result_ = result;
}

std::string KvCheckMetrics::prometheus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!result_) return {};
  const engine::KvQualityResult& r = *result_;
  const std::string labels = std::string("{ctk=\"") + tensor::dtype_name(r.types.k) + "\",ctv=\"" +
                             tensor::dtype_name(r.types.v) + "\"}";
  std::string out;
  auto gauge = [&](const char* name, const char* help, double value) {
    char num[64];
    std::snprintf(num, sizeof num, "%.9g", value);
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + labels + " " + num + "\n";
  };
  gauge("keel_kv_quality_mean_kl", "Start-up KV check: mean KL divergence (nats) vs an f32 KV cache.", r.mean_kl);
  gauge("keel_kv_quality_top1_agreement", "Start-up KV check: fraction of positions with the same top-1 token.",
        r.top1_agreement);
  gauge("keel_kv_quality_first_divergence", "Start-up KV check: first generated token where greedy output differs (-1: none).",
        static_cast<double>(r.first_divergence));
  gauge("keel_kv_quality_degraded", "Start-up KV check: 1 when the quantized KV cache is beyond the limits.",
        r.degraded ? 1 : 0);
  return out;
}

}  // namespace keel::sweep
