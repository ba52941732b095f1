#include "sweep/sweep_child.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>

#include "core/error.h"
#include "engine/model_backend.h"
#include "model/model.h"
#include "server/engine_service.h"
#include "sweep/stream_check.h"
#include "sweep/sweep_json.h"
#include "tokenizer/tokenizer.h"

namespace keel::sweep {
namespace {

using Clock = std::chrono::steady_clock;

void emit(std::FILE* out, const json& line) {
  const std::string s = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::fwrite(s.data(), 1, s.size(), out);
  std::fflush(out);  // the parent must see the plan even if we die right after
}

bool injected(const char* env, const SweepConfig& config) {
  const char* v = std::getenv(env);
  return v && *v && config.label().find(v) != std::string::npos;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One request's progress while the engine runs it.
struct Tracked {
  std::unique_ptr<server::EventSource> source;
  std::string text;
  int64_t generated = 0;
  bool first = false, done = false;
  Clock::time_point t_first{};
  engine::Event finish;
};

// Submits the prompt n_parallel times at once and waits for all: figures of request 0.
void run_requests(server::InferenceService& service, const std::vector<int32_t>& prompt, const RunSpec& spec,
                  SweepRow& row) {
  const int32_t n = spec.config.n_parallel;
  std::vector<Tracked> reqs(static_cast<size_t>(n));
  const auto t_start = Clock::now();
  for (Tracked& t : reqs) {
    engine::Request req;
    req.prompt = prompt;
    req.max_tokens = spec.n_predict;
    req.ignore_eos = spec.ignore_eos;
    req.sampling.temperature = 0.0f;
    req.sampling.seed = 0;
    t.source = service.submit(std::move(req));
  }
  size_t open = reqs.size();
  const auto wait = std::chrono::milliseconds(n == 1 ? 1000 : 2);
  while (open > 0) {
    for (Tracked& t : reqs) {
      if (t.done) continue;
      auto ev = t.source->next(wait);  // a poll: never cancels
      if (!ev) continue;
      if (ev->kind == engine::Event::Kind::kDelta) {
        if (!t.first && !ev->tokens.empty()) {
          t.first = true;
          t.t_first = Clock::now();
        }
        t.text += ev->text;
        t.generated += static_cast<int64_t>(ev->tokens.size());
        continue;
      }
      t.finish = std::move(*ev);
      t.done = true;
      --open;
    }
  }
  const auto t_end = Clock::now();
  for (const Tracked& t : reqs) {
    if (t.finish.reason == engine::FinishReason::kError) {
      throw Error(ErrorCode::kInternal, "request failed: " + t.finish.error);
    }
  }
  // Prefill: until every request has its first token (the prompts are computed together).
  Clock::time_point all_first = t_start;
  int64_t after_first = 0;
  for (const Tracked& t : reqs) {
    all_first = std::max(all_first, t.first ? t.t_first : t_end);
    after_first += std::max<int64_t>(0, t.finish.usage.completion_tokens - 1);
  }
  const Tracked& r0 = reqs[0];
  row.prompt_tokens = static_cast<int64_t>(prompt.size());
  row.generated_tokens = r0.finish.usage.completion_tokens;
  row.text = r0.text;
  row.ttft_seconds = seconds((r0.first ? r0.t_first : t_end) - t_start);
  const double prefill_s = seconds(all_first - t_start);
  row.prefill_tps = prefill_s > 0 ? static_cast<double>(prompt.size()) * n / prefill_s : 0;
  const double gen_s = seconds(t_end - all_first);
  row.gen_tps = gen_s > 0 ? static_cast<double>(after_first) / gen_s : 0;
  if (n > 1) {
    bool same = true;
    for (const Tracked& t : reqs) same = same && t.text == r0.text;
    row.parallel_same = same;
  }
}

int run_config_unguarded(const RunSpec& spec, std::FILE* out) {
  const std::string prompt_text = read_text_file(spec.prompt_file);
  engine::LoadOptions load;
  load.model_path = spec.model;
  load.engine.n_parallel = spec.config.n_parallel;
  load.engine.n_ctx = spec.config.n_ctx;
  load.engine.batch_tokens = spec.batch_tokens;
  load.engine.flash_attention = spec.config.flash_attention;
  load.engine.threads = spec.threads;
  load.k_type = spec.config.k_type;
  load.v_type = spec.config.v_type;
  load.mem_limit_bytes = spec.mem_limit_bytes;

  engine::LoadedModel loaded = engine::open_model(load);
  emit(out, {{"plan", plan_to_json(verdict_of(loaded.plan))}});
  if (!loaded.plan.fits) {
    try {
      engine::require_fits(loaded.plan);
    } catch (const Error& e) {
      emit(out, {{"refused", e.what()}});
    }
    return 3;
  }
  server::EngineServiceParts parts;
  parts.engine = engine::start_engine(loaded, load);
  parts.tokenizer = loaded.tokenizer;
  parts.model_id = "sweep";
  auto service = std::make_shared<server::EngineService>(std::move(parts));

  if (injected("KEEL_SWEEP_CRASH", spec.config)) ::raise(SIGSEGV);  // tests: a crash mid-run
  if (injected("KEEL_SWEEP_HANG", spec.config)) {
    for (;;) ::pause();  // tests: a hang, ended by the parent's timeout
  }

  // The prompt as /v1/completions encodes text: the vocabulary's BOS default, no
  // special-token parsing — so the HTTP check below sends exactly the same tokens.
  const std::vector<int32_t> prompt = loaded.tokenizer->encode(prompt_text, {});
  if (prompt.empty()) throw Error(ErrorCode::kInvalidArgument, spec.prompt_file + ": the prompt encodes to no tokens");
  SweepRow row;
  run_requests(*service, prompt, spec, row);
  if (spec.stream_check) {
    const StreamTexts texts = compare_stream(service, {prompt_text, spec.n_predict, spec.ignore_eos});
    row.stream = StreamCheck{texts.streamed == texts.whole, texts.whole == row.text, texts.chunks};
  }
  service->shutdown(std::chrono::milliseconds(0));
  emit(out, {{"result", figures_to_json(row)}});
  return 0;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, path + ": cannot open the prompt file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(ErrorCode::kIo, path + ": read failed");
  return text;
}

int run_config(const RunSpec& spec, std::FILE* out) {
  try {
    return run_config_unguarded(spec, out);
  } catch (const std::exception& e) {
    emit(out, {{"error", e.what()}});
    return 1;
  }
}

int run_quality(const QualitySpec& spec, std::FILE* out) {
  try {
    const std::string text = read_text_file(spec.prompt_file);
    model::Model model(spec.model);
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model.file());
    std::vector<int32_t> prompt = tok.encode(text, {});
    if (prompt.empty()) throw Error(ErrorCode::kInvalidArgument, spec.prompt_file + ": the prompt encodes to no tokens");
    if (static_cast<int64_t>(prompt.size()) > spec.max_prompt_tokens) prompt.resize(spec.max_prompt_tokens);
    const engine::KvQualityReport report = engine::measure_kv_quality(model, prompt, spec.pairs, spec.options);
    json results = json::array();
    for (const engine::KvQualityResult& r : report.results) results.push_back(quality_to_json(r));
    emit(out, {{"quality", results}, {"baseline", report.baseline.name()}, {"prompt_tokens", report.prompt_tokens}});
    return 0;
  } catch (const std::exception& e) {
    emit(out, {{"error", e.what()}});
    return 1;
  }
}

}  // namespace keel::sweep
