// HttpServer — keel's OpenAI-compatible HTTP front end on cpp-httplib.
//
// Routes: POST /v1/chat/completions, POST /v1/completions (streaming and not),
// GET /v1/models, GET /health, GET /metrics, GET /slots, POST /tokenize, POST /detokenize.
//
// Contract:
//  - Construct, bind(), then run() on one thread (blocks until shutdown). /health answers
//    503 "loading" until set_service() supplies the loaded model; completions get 503 too.
//  - The HTTP layer never touches the model: it validates and tokenizes on its own
//    threads, submits to the service, and waits on the request's channel with a timeout
//    that only polls (DESIGN.md rule 1). A failed write cancels the request explicitly.
//  - Every error reaching a client is an OpenAI error object with a 4xx/5xx status, or an
//    SSE `data: {"error": ...}` event once a stream has begun. No request aborts the
//    process; a handler's exception becomes a 500.
//  - shutdown() may be called from any thread (e.g. a signal-waiting thread): it stops
//    accepting connections and new completions, lets in-flight requests finish for up to
//    `grace`, then cancels the rest and waits for their handlers; after it returns, run()
//    returns.
//  - Browsers: origins on options.cors_origins get CORS headers and their OPTIONS
//    preflight answered (before the API key check, which a preflight cannot pass).
//  - Thread-safety: set_service(), shutdown() and the accessors are thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/service.h"

namespace keel::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;              // 0: any free port (see bind())
  std::string api_key;          // empty: no authentication
  // Page origins a browser may let read the responses (cors.h): exact origins, "*", or
  // "loopback" (localhost pages, the default). Empty: no cross-origin access.
  std::vector<std::string> cors_origins = {"loopback"};
  double heartbeat_seconds = 5; // SSE keep-alive interval (> 0; fractions allowed)
  size_t max_body_bytes = 8u << 20;
  int io_timeout_seconds = 600; // socket read/write timeout
  double request_timeout_seconds = 0;  // engine deadline per request; 0 = none
  int max_inflight = 64;        // completion requests at once (parallel + queue) before 429
  int http_threads = 0;         // 0: max_inflight + 8, so /health and /metrics stay served
  int keep_alive_seconds = 5;
  // More Prometheus text appended to /metrics (e.g. the start-up KV check's gauges);
  // called on HTTP threads, so it must be thread-safe. Empty: nothing added.
  std::function<std::string()> extra_metrics;
};

class HttpServer {
 public:
  explicit HttpServer(const ServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port. Throws keel::Error(kIo) naming the
  // address when it cannot.
  int bind();
  void run();

  void set_service(std::shared_ptr<InferenceService> service);
  void shutdown(std::chrono::milliseconds grace);

  struct State;  // shared with the route handlers (server_state.h)

 private:
  void stop_listening();

  std::unique_ptr<State> state_;
};

}  // namespace keel::server
