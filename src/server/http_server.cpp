#include "server/http_server.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/log.h"
#include "server/cors.h"
#include "server/server_state.h"

namespace keel::server {

// ---- InflightRegistry ------------------------------------------------------------

InflightRegistry::Entry& InflightRegistry::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    reset();
    registry_ = std::exchange(other.registry_, nullptr);
    source_ = std::exchange(other.source_, nullptr);
  }
  return *this;
}

void InflightRegistry::Entry::reset() {
  if (registry_) registry_->remove(source_);
  registry_ = nullptr;
  source_ = nullptr;
}

InflightRegistry::Entry InflightRegistry::add(EventSource* source) {
  std::lock_guard<std::mutex> lock(mutex_);
  sources_.insert(source);
  return Entry(this, source);
}

void InflightRegistry::remove(EventSource* source) {
  std::lock_guard<std::mutex> lock(mutex_);
  sources_.erase(source);
  if (sources_.empty()) empty_.notify_all();
}

size_t InflightRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sources_.size();
}

bool InflightRegistry::wait_empty(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return empty_.wait_for(lock, timeout, [&] { return sources_.empty(); });
}

void InflightRegistry::cancel_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (EventSource* s : sources_) s->cancel();
}

// ---- helpers ---------------------------------------------------------------------

void send_json(httplib::Response& res, const json& body, int status) {
  res.status = status;
  res.set_content(dump(body), "application/json; charset=utf-8");
}

void send_error(httplib::Response& res, const ApiError& error) {
  send_json(res, error.to_json(), error.status());
}

std::shared_ptr<InferenceService> require_service(const HttpServer::State& state) {
  if (state.draining.load()) throw unavailable("shutting_down", "the server is shutting down");
  auto service = state.service();
  if (!service) throw unavailable("loading", "the model is still loading; retry shortly");
  return service;
}

namespace {

bool same_secret(const std::string& given, const std::string& key) {
  // No early exit on the first differing byte (timing); the length may leak.
  if (given.size() != key.size() || key.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

// CORS (cors.h): headers for an allowed Origin on every response, and the preflight's
// answer. Returns true when `req` was a preflight (answered here).
bool handle_cors(const HttpServer::State& s, const httplib::Request& req, httplib::Response& res) {
  const std::string origin = req.get_header_value("Origin");
  const bool allowed = cors_origin_allowed(origin, s.options.cors_origins);
  if (allowed) {
    res.set_header("Access-Control-Allow-Origin", origin);
    res.set_header("Vary", "Origin");
  }
  if (req.method != "OPTIONS") return false;
  if (!origin.empty() && !allowed) {
    send_error(res, ApiError(403, "invalid_request_error", "cors_origin_not_allowed", "",
                             "origin '" + sanitize_utf8(origin) + "' is not allowed (see --cors-origin)"));
    return true;
  }
  res.status = 204;
  res.set_header("Allow", "GET, POST, OPTIONS");
  if (allowed) {
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
    res.set_header("Access-Control-Max-Age", "600");
  }
  return true;
}

void install_hooks(HttpServer::State& s) {
  s.http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) -> httplib::Server::HandlerResponse {
    if (handle_cors(s, req, res)) return httplib::Server::HandlerResponse::Handled;
    if (s.options.api_key.empty() || req.path == "/health" || req.path == "/v1/health") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    // `Authorization: Bearer KEY`, or `X-Api-Key: KEY` as llama-server also reads it.
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    const bool bearer_ok = auth.rfind(prefix, 0) == 0 && same_secret(auth.substr(prefix.size()), s.options.api_key);
    const bool header_ok = req.has_header("X-Api-Key") && same_secret(req.get_header_value("X-Api-Key"), s.options.api_key);
    if (!bearer_ok && !header_ok) {
      send_error(res, unauthorized(auth.empty() ? "missing API key: send 'Authorization: Bearer <key>'"
                                                : "invalid API key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Statuses httplib produces itself (404, 413, 400 for a malformed request line) get an
  // OpenAI error body too; responses that already have one are left alone.
  s.http.set_error_handler(httplib::Server::HandlerWithResponse([&s](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404) {
      send_error(res, not_found("no route for " + sanitize_utf8(req.method) + " " + sanitize_utf8(req.path)));
    } else if (res.status == 413) {
      send_error(res, payload_too_large("request body exceeds --max-body (" +
                                        std::to_string(s.options.max_body_bytes) + " bytes)"));
    } else {
      const int status = res.status;
      send_error(res, ApiError(status, status >= 500 ? "server_error" : "invalid_request_error",
                               "http_" + std::to_string(status), "", "HTTP error " + std::to_string(status)));
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log_error("server: handler threw: " + what);
    send_error(res, internal_error("internal error: " + what));
  });
  s.http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    s.counters.count_response(res.status);
    log_debug("server: " + req.method + " " + req.path + " -> " + std::to_string(res.status));
  });
}

}  // namespace

// ---- HttpServer ------------------------------------------------------------------

HttpServer::HttpServer(const ServerOptions& options) : state_(std::make_unique<State>(options)) {
  ServerOptions& o = state_->options;
  if (!(o.heartbeat_seconds > 0) || !std::isfinite(o.heartbeat_seconds)) {
    throw Error(ErrorCode::kInvalidArgument, "--heartbeat must be > 0 seconds");
  }
  if (o.max_inflight < 1) throw Error(ErrorCode::kInvalidArgument, "max in-flight requests must be >= 1");
  const int threads = o.http_threads > 0 ? o.http_threads : o.max_inflight + 8;
  auto& http = state_->http;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_payload_max_length(o.max_body_bytes);
  http.set_read_timeout(o.io_timeout_seconds, 0);
  http.set_write_timeout(o.io_timeout_seconds, 0);
  http.set_keep_alive_timeout(o.keep_alive_seconds);
  http.set_keep_alive_max_count(1000);
  install_hooks(*state_);
  add_completion_routes(*state_);
  add_info_routes(*state_);
  add_llama_routes(*state_);
  add_responses_routes(*state_);
  add_anthropic_routes(*state_);
}

HttpServer::~HttpServer() { stop_listening(); }

void HttpServer::stop_listening() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.run_mutex);
    if (s.stopped) return;  // httplib's stop() must run once (a second call asserts)
    s.stopped = true;
    if (!s.run_entered) return;  // run() has not started and now never listens
  }
  // run() is entering listen_after_bind(); httplib can only be stopped once it runs.
  // Bounded: listening starts at once after bind(), and a listen that failed has
  // returned already.
  for (int i = 0; i < 5000 && !s.http.is_running() && !s.run_returned; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.http.stop();
}

int HttpServer::bind() {
  auto& o = state_->options;
  int port = o.port == 0 ? state_->http.bind_to_any_port(o.host)
                         : (state_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) {
    throw Error(ErrorCode::kIo, "cannot listen on " + o.host + ":" + std::to_string(o.port) +
                                    " (address in use or not available)");
  }
  o.port = port;
  return port;
}

void HttpServer::run() {
  {
    std::lock_guard<std::mutex> lock(state_->run_mutex);
    if (state_->stopped) return;  // shut down before it ever listened
    state_->run_entered = true;
  }
  state_->http.listen_after_bind();
  state_->run_returned = true;
}

void HttpServer::set_service(std::shared_ptr<InferenceService> service) {
  state_->set_service(std::move(service));
}

void HttpServer::shutdown(std::chrono::milliseconds grace) {
  State& s = *state_;
  s.draining.store(true);
  stop_listening();  // closes the listening socket; run() returns once handlers are done
  if (!s.inflight.wait_empty(grace)) {
    log_warn("server: " + std::to_string(s.inflight.size()) +
             " request(s) still running after the shutdown grace period; cancelling");
    s.inflight.cancel_all();
    s.inflight.wait_empty(std::chrono::milliseconds(30000));
  }
}

}  // namespace keel::server
