// `keel run`: generate a continuation of a prompt and stream it to stdout.
//
// It goes through the same engine as the server (one slot), so `keel run` and
// `keel serve` give the same text for the same request and seed.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/kv_type_option.h"
#include "core/error.h"
#include "engine/engine.h"
#include "engine/model_backend.h"
#include "tensor/types.h"
#include "tokenizer/tokenizer.h"

namespace keel::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int32_t n_predict = 128;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  uint64_t seed = 0;
  int32_t threads = 0;
  int32_t ctx = 2048;
  std::string flash_attn = "on";
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  bool no_bos = false;
  bool parse_special = false;
  bool ignore_eos = false;
};

int run_generate(const RunOptions& o) {
  using Clock = std::chrono::steady_clock;
  engine::LoadOptions load;
  load.model_path = o.model;
  load.engine.n_parallel = 1;
  load.engine.n_ctx = o.ctx;
  load.engine.threads = o.threads;
  load.engine.flash_attention = o.flash_attn == "on";
  load.k_type = parse_kv_type(o.cache_type_k, "--cache-type-k");
  load.v_type = parse_kv_type(o.cache_type_v, "--cache-type-v");

  const auto t_load = Clock::now();
  engine::LoadedModel loaded = engine::open_model(load);
  std::unique_ptr<engine::Engine> eng = engine::start_engine(loaded, load);

  tokenizer::EncodeOptions enc;
  if (o.no_bos) enc.add_bos = false;
  enc.parse_special = o.parse_special;
  engine::Request req;
  req.prompt = loaded.tokenizer->encode(o.prompt, enc);
  if (req.prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt encodes to no tokens");
  req.max_tokens = o.n_predict;
  req.ignore_eos = o.ignore_eos;
  req.sampling.temperature = o.temperature;
  req.sampling.top_k = o.top_k;
  req.sampling.top_p = o.top_p;
  req.sampling.min_p = o.min_p;
  req.sampling.repeat_penalty = o.repeat_penalty;
  req.sampling.seed = o.seed;
  const size_t n_prompt = req.prompt.size();

  const auto t_start = Clock::now();
  engine::RequestHandle handle = eng->submit(std::move(req));
  std::fputs(o.prompt.c_str(), stdout);
  std::fflush(stdout);

  engine::Event finish;
  for (;;) {
    auto ev = handle.next(std::chrono::milliseconds(1000));
    if (!ev) continue;  // still working: polling never cancels
    if (ev->kind == engine::Event::Kind::kDelta) {
      std::fwrite(ev->text.data(), 1, ev->text.size(), stdout);
      std::fflush(stdout);
      continue;
    }
    finish = std::move(*ev);
    break;
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  eng->shutdown(std::chrono::milliseconds(0));

  auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  const double load_s = secs(t_start - t_load);
  // The engine's own times: text can be held back (an incomplete UTF-8 character, a
  // possible stop string), so the arrival of the first text says little about the prefill.
  const double prefill_s = finish.usage.prompt_ms * 1e-3;
  const int64_t n_gen = finish.usage.completion_tokens;
  const double gen_s = finish.usage.generation_ms * 1e-3;
  std::fprintf(stderr, "keel run: load %.2f s; prompt %zu tokens in %.3f s (%.1f t/s); ", load_s,
               n_prompt, prefill_s, prefill_s > 0 ? n_prompt / prefill_s : 0.0);
  // The first token arrives with the prefill; the rest are generation proper.
  std::fprintf(stderr, "generated %lld tokens, %.1f t/s; finish: %s\n", static_cast<long long>(n_gen),
               (n_gen > 1 && gen_s > 0) ? (n_gen - 1) / gen_s : 0.0,
               engine::finish_reason_name(finish.reason));
  if (finish.reason == engine::FinishReason::kError) {
    std::fprintf(stderr, "keel run: error: %s\n", finish.error.c_str());
    return 1;
  }
  return 0;
}

CommandRunner setup_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  app.add_option("-p,--prompt", o->prompt, "prompt text")->required();
  app.add_option("-n,--n-predict", o->n_predict, "tokens to generate")->check(CLI::Range(1, 1 << 20));
  app.add_option("--temp", o->temperature, "temperature (0 = greedy)")->check(CLI::Range(0.0, 100.0));
  app.add_option("--top-k", o->top_k, "top-k (0 = off)")->check(CLI::Range(0, 1 << 30));
  app.add_option("--top-p", o->top_p, "top-p")->check(CLI::Range(0.0, 1.0));
  app.add_option("--min-p", o->min_p, "min-p")->check(CLI::Range(0.0, 1.0));
  app.add_option("--repeat-penalty", o->repeat_penalty, "repetition penalty");
  app.add_option("-s,--seed", o->seed, "sampling seed");
  app.add_option("-t,--threads", o->threads, "threads (0 = all cores)")->check(CLI::Range(0, 1024));
  app.add_option("-c,--ctx", o->ctx, "context size")->check(CLI::Range(16, 1 << 20));
  app.add_option("--fa,--flash-attn", o->flash_attn, "flash attention on|off")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--ctk,--cache-type-k", o->cache_type_k, "KV cache type for K");
  app.add_option("--ctv,--cache-type-v", o->cache_type_v, "KV cache type for V");
  app.add_flag("--no-bos", o->no_bos, "do not add BOS");
  app.add_flag("--parse-special", o->parse_special, "parse special-token text in the prompt");
  app.add_flag("--ignore-eos", o->ignore_eos, "keep generating past end-of-generation tokens");
  return [o] { return run_generate(*o); };
}

CommandRegistrar registrar("run", "Generate a continuation of a prompt, streamed to stdout", setup_run);

}  // namespace
}  // namespace keel::cli
