// `keel serve`: the OpenAI-compatible HTTP server (src/server) over the engine.
//
// Start-up order: bind and serve at once (/health answers 503 "loading"), then load the
// model and plan memory, then hand the engine to the server (/health 200). SIGINT/SIGTERM
// start a graceful shutdown: stop accepting, let in-flight requests finish within
// --shutdown-timeout, cancel the rest, exit 0.
#include <algorithm>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "chat/template.h"
#include "cli/command.h"
#include "cli/kv_type_option.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/model_backend.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "server/engine_service.h"
#include "server/http_server.h"
#include "sweep/kv_check.h"
#include "tokenizer/tokenizer.h"

namespace keel::cli {
namespace {

struct ServeOptions {
  std::string model;
  std::string alias;  // model id served; default: the file's stem
  server::ServerOptions http;
  int32_t ctx = 4096;
  int32_t parallel = 4;
  int32_t batch = 512;
  int32_t queue = 64;
  std::string flash_attn = "on";
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  int32_t threads = 0;
  std::string mem_limit;  // "8G"; empty = available memory
  bool context_shift = false;
  int32_t keep = 0;
  std::string chat_template;
  std::string max_body = "8M";
  double shutdown_timeout = 10.0;
  bool dry_run = false;
  bool check_kv = false;
  bool kv_check = false;  // start-up quality check of a quantized KV cache (sweep/kv_check.h)
};

engine::LoadOptions load_options(const ServeOptions& o) {
  engine::LoadOptions load;
  load.model_path = o.model;
  load.engine.n_parallel = o.parallel;
  load.engine.n_ctx = o.ctx;
  load.engine.batch_tokens = o.batch;
  load.engine.max_queue = o.queue;
  load.engine.context_shift = o.context_shift;
  load.engine.n_keep = o.keep;
  load.engine.flash_attention = o.flash_attn == "on";
  load.engine.threads = o.threads;
  load.engine.check_kv = o.check_kv;
  load.k_type = parse_kv_type(o.cache_type_k, "--cache-type-k");
  load.v_type = parse_kv_type(o.cache_type_v, "--cache-type-v");
  if (!o.mem_limit.empty()) load.mem_limit_bytes = engine::parse_byte_size(o.mem_limit);
  return load;
}

std::shared_ptr<server::EngineService> load_service(const ServeOptions& o, const engine::LoadOptions& load,
                                                    sweep::KvCheckMetrics& kv_metrics) {
  engine::LoadedModel loaded = engine::open_model(load);
  log_info("serve: memory plan\n" + loaded.plan.to_text());
  if (o.kv_check && loaded.plan.fits) kv_metrics.set(sweep::kv_startup_check(loaded, load));
  const std::string name = loaded.model->file().get_string_or("general.name", "");
  if (name.find("random weights") != std::string::npos) {
    log_warn("serve: '" + name + "' has RANDOM WEIGHTS (a generated demo model): its text is noise");
  }
  const chat::TemplateChoice choice =
      chat::choose_template(o.chat_template, loaded.model->file().get_string_or("tokenizer.chat_template", ""));
  if (!choice.recognised) {
    log_warn(std::string("serve: chat template not recognised; using the fallback '") +
             chat::family_name(choice.family) + "' (choose one with --chat-template " + chat::family_names() + ")");
  }
  server::EngineServiceParts parts;
  parts.engine = engine::start_engine(loaded, load);
  parts.tokenizer = loaded.tokenizer;
  parts.chat_family = choice.family;
  parts.model_id = o.alias.empty() ? std::filesystem::path(o.model).stem().string() : o.alias;
  return std::make_shared<server::EngineService>(std::move(parts));
}

int serve(ServeOptions o) {
  const engine::LoadOptions load = load_options(o);
  if (o.dry_run) {
    engine::LoadedModel loaded = engine::open_model(load);
    std::fputs(loaded.plan.to_text().c_str(), stdout);
    return loaded.plan.fits ? 0 : 1;
  }
  o.http.max_body_bytes = engine::parse_byte_size(o.max_body);
  o.http.max_inflight = o.parallel + o.queue;
  auto& cors = o.http.cors_origins;
  cors.erase(std::remove(cors.begin(), cors.end(), "none"), cors.end());
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000.0));

  // Signals go to one waiting thread (blocked everywhere else, inherited by every thread
  // created below); a client that disappears must never kill us with SIGPIPE.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto kv_metrics = std::make_shared<sweep::KvCheckMetrics>();
  o.http.extra_metrics = [kv_metrics] { return kv_metrics->prometheus(); };
  server::HttpServer http(o.http);
  const int port = http.bind();
  std::atomic<bool> stopping{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    stopping.store(true);
    log_info(std::string("serve: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ": shutting down (up to " +
             std::to_string(o.shutdown_timeout) + " s for requests in flight)");
    http.shutdown(grace);
  });
  signal_thread.detach();  // lives until a signal; the process may end without one
  std::thread server_thread([&] { http.run(); });
  log_info("serve: listening on http://" + o.http.host + ":" + std::to_string(port) + " (loading " + o.model + ")");

  std::shared_ptr<server::EngineService> service;
  try {
    service = load_service(o, load, *kv_metrics);
  } catch (...) {
    http.shutdown(std::chrono::milliseconds(0));
    server_thread.join();
    throw;
  }
  if (!stopping.load()) {
    http.set_service(service);
    log_info("serve: ready: " + service->model_info().id + " (ctx " + std::to_string(o.ctx) + ", " +
             std::to_string(o.parallel) + " slots, queue " + std::to_string(o.queue) + ")");
  }
  server_thread.join();
  service->shutdown(std::chrono::milliseconds(0));
  log_info("serve: stopped");
  return 0;
}

CommandRunner setup_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  auto opt = [&](auto* option, const char* env) { option->envname(env); };
  opt(app.add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile), "KEEL_MODEL");
  opt(app.add_option("--alias", o->alias, "model id served in /v1/models (default: file name)"), "KEEL_ALIAS");
  opt(app.add_option("--host", o->http.host, "address to listen on")->capture_default_str(), "KEEL_HOST");
  opt(app.add_option("--port", o->http.port, "port (0 = any free port)")->capture_default_str()->check(CLI::Range(0, 65535)), "KEEL_PORT");
  opt(app.add_option("-c,--ctx", o->ctx, "context per request (prompt + completion)")->capture_default_str()->check(CLI::Range(16, 1 << 22)), "KEEL_CTX");
  opt(app.add_option("--np,--parallel", o->parallel, "slots: requests generating at once")->capture_default_str()->check(CLI::Range(1, 1024)), "KEEL_PARALLEL");
  opt(app.add_option("-b,--batch", o->batch, "tokens per engine step (prefill chunk budget)")->capture_default_str()->check(CLI::Range(1, 1 << 20)), "KEEL_BATCH");
  opt(app.add_option("--queue", o->queue, "requests waiting for a slot before 429")->capture_default_str()->check(CLI::Range(0, 100000)), "KEEL_QUEUE");
  opt(app.add_option("--fa,--flash-attn", o->flash_attn, "flash attention on|off")->capture_default_str()->check(CLI::IsMember({"on", "off"})), "KEEL_FLASH_ATTN");
  opt(app.add_option("--ctk,--cache-type-k", o->cache_type_k, "KV cache type for K (f32, f16, bf16, q8_0, q4_0)")->capture_default_str(), "KEEL_CACHE_TYPE_K");
  opt(app.add_option("--ctv,--cache-type-v", o->cache_type_v, "KV cache type for V")->capture_default_str(), "KEEL_CACHE_TYPE_V");
  opt(app.add_option("-t,--threads", o->threads, "kernel threads (0 = all cores)")->check(CLI::Range(0, 1024)), "KEEL_THREADS");
  opt(app.add_option("--api-key", o->http.api_key, "require 'Authorization: Bearer KEY' on every route but /health"), "KEEL_API_KEY");
  opt(app.add_option("--cors-origin", o->http.cors_origins,
                     "page origin a browser may call from: https://host[:port], '*' (any), 'loopback' (localhost pages, the default) or 'none'; repeatable")
          ->capture_default_str()
          ->delimiter(',')
          ->check(CLI::Validator(
              [](std::string& v) -> std::string {
                if (v == "*" || v == "loopback" || v == "none" || v.rfind("http://", 0) == 0 || v.rfind("https://", 0) == 0) return "";
                return "expected http(s)://host[:port], '*', 'loopback' or 'none', got '" + v + "'";
              },
              "ORIGIN")),
      "KEEL_CORS_ORIGIN");
  opt(app.add_option("--timeout", o->http.io_timeout_seconds, "socket read/write timeout, seconds")->capture_default_str()->check(CLI::Range(1, 86400)), "KEEL_TIMEOUT");
  opt(app.add_option("--request-timeout", o->http.request_timeout_seconds, "longest a request may run, seconds (0 = no limit)")->check(CLI::Range(0.0, 1e7)), "KEEL_REQUEST_TIMEOUT");
  opt(app.add_option("--heartbeat", o->http.heartbeat_seconds, "SSE keep-alive interval while nothing is written, seconds (fractions allowed)")->capture_default_str()->check(CLI::Range(0.001, 3600.0)), "KEEL_HEARTBEAT");
  opt(app.add_option("--mem-limit", o->mem_limit, "memory the plan must fit in, e.g. 8G (default: available memory)"), "KEEL_MEM_LIMIT");
  opt(app.add_flag("--context-shift", o->context_shift, "on a full context, drop old tokens and go on instead of stopping"), "KEEL_CONTEXT_SHIFT");
  opt(app.add_option("--keep", o->keep, "tokens kept at the start on a context shift")->check(CLI::Range(0, 1 << 22)), "KEEL_KEEP");
  opt(app.add_option("--chat-template", o->chat_template, "chat template family: " + chat::family_names() + " (default: detected from the model)"), "KEEL_CHAT_TEMPLATE");
  opt(app.add_option("--max-body", o->max_body, "largest request body, e.g. 8M")->capture_default_str(), "KEEL_MAX_BODY");
  opt(app.add_option("--shutdown-timeout", o->shutdown_timeout, "on SIGINT/SIGTERM, seconds in-flight requests get to finish")->capture_default_str()->check(CLI::Range(0.0, 86400.0)), "KEEL_SHUTDOWN_TIMEOUT");
  app.add_flag("--dry-run", o->dry_run, "print the memory plan and exit");
  opt(app.add_flag("--check-kv", o->check_kv, "check the KV cache invariants after every step (slow; for tests)"), "KEEL_CHECK_KV");
  opt(app.add_flag("--kv-check", o->kv_check, "at start-up, measure a quantized KV cache against f32 KV (KL, top-1) and warn when it degrades the model"), "KEEL_KV_CHECK");
  return [o] { return serve(*o); };
}

CommandRegistrar registrar("serve", "Serve a model over an OpenAI-compatible HTTP API", setup_serve);

}  // namespace
}  // namespace keel::cli
