#include "sweep/sweep_json.h"

#include "core/error.h"

namespace keel::sweep {
namespace {

tensor::DType type_from(const json& j) {
  const auto t = tensor::dtype_from_name(j.get<std::string>());
  if (!t) throw Error(ErrorCode::kInvalidArgument, "sweep: unknown type '" + j.get<std::string>() + "'");
  return *t;
}

}  // namespace

json plan_to_json(const PlanVerdict& p) {
  return {{"fits", p.fits},           {"total_bytes", p.total_bytes}, {"limit_bytes", p.limit_bytes},
          {"weights_bytes", p.weights_bytes}, {"kv_bytes", p.kv_bytes}, {"workspace_bytes", p.workspace_bytes}};
}

PlanVerdict plan_from_json(const json& j) {
  PlanVerdict p;
  p.known = true;
  p.fits = j.value("fits", false);
  p.total_bytes = j.value("total_bytes", uint64_t{0});
  p.limit_bytes = j.value("limit_bytes", uint64_t{0});
  p.weights_bytes = j.value("weights_bytes", uint64_t{0});
  p.kv_bytes = j.value("kv_bytes", uint64_t{0});
  p.workspace_bytes = j.value("workspace_bytes", uint64_t{0});
  return p;
}

PlanVerdict verdict_of(const engine::MemoryPlan& plan) {
  PlanVerdict p;
  p.known = true;
  p.fits = plan.fits;
  p.total_bytes = plan.total_bytes;
  p.limit_bytes = plan.limit_bytes;
  p.weights_bytes = plan.weights_bytes;
  p.kv_bytes = plan.kv_bytes;
  p.workspace_bytes = plan.workspace_bytes;
  return p;
}

json figures_to_json(const SweepRow& r) {
  json j = {{"prompt_tokens", r.prompt_tokens}, {"generated_tokens", r.generated_tokens},
            {"prefill_tps", r.prefill_tps},     {"gen_tps", r.gen_tps},
            {"ttft_seconds", r.ttft_seconds},   {"text", r.text}};
  if (r.parallel_same) j["parallel_same"] = *r.parallel_same;
  if (r.stream) {
    j["stream"] = {{"streamed_equals_whole", r.stream->streamed_equals_whole},
                   {"equals_engine", r.stream->equals_engine},
                   {"stream_chunks", r.stream->stream_chunks}};
  }
  return j;
}

void figures_from_json(const json& j, SweepRow& r) {
  r.prompt_tokens = j.value("prompt_tokens", int64_t{-1});
  r.generated_tokens = j.value("generated_tokens", int64_t{-1});
  r.prefill_tps = j.value("prefill_tps", 0.0);
  r.gen_tps = j.value("gen_tps", 0.0);
  r.ttft_seconds = j.value("ttft_seconds", 0.0);
  r.text = j.value("text", std::string());
  if (j.contains("parallel_same")) r.parallel_same = j.at("parallel_same").get<bool>();
  if (j.contains("stream")) {
    const json& s = j.at("stream");
    r.stream = StreamCheck{s.value("streamed_equals_whole", false), s.value("equals_engine", false),
                           s.value("stream_chunks", int64_t{0})};
  }
}

json quality_to_json(const engine::KvQualityResult& q) {
  return {{"ctk", tensor::dtype_name(q.types.k)},
          {"ctv", tensor::dtype_name(q.types.v)},
          {"positions", q.positions},
          {"mean_kl", q.mean_kl},
          {"max_kl", q.max_kl},
          {"top1_agreement", q.top1_agreement},
          {"first_divergence", q.first_divergence},
          {"degraded", q.degraded}};
}

engine::KvQualityResult quality_from_json(const json& j) {
  engine::KvQualityResult q;
  q.types.k = type_from(j.at("ctk"));
  q.types.v = type_from(j.at("ctv"));
  q.positions = j.value("positions", int64_t{0});
  q.mean_kl = j.value("mean_kl", 0.0);
  q.max_kl = j.value("max_kl", 0.0);
  q.top1_agreement = j.value("top1_agreement", 0.0);
  q.first_divergence = j.value("first_divergence", int64_t{-1});
  q.degraded = j.value("degraded", false);
  return q;
}

json config_to_json(const SweepConfig& c) {
  return {{"label", c.label()},
          {"flash_attention", c.flash_attention},
          {"ctk", tensor::dtype_name(c.k_type)},
          {"ctv", tensor::dtype_name(c.v_type)},
          {"ctx", c.n_ctx},
          {"parallel", c.n_parallel}};
}

}  // namespace keel::sweep
