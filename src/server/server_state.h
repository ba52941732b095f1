// Internal to src/server: the state HttpServer shares with its route handlers, and small
// response helpers. Not part of the public surface.
//
// Contract: every member is safe to use from any HTTP thread (atomics, or guarded by the
// mutex named beside it). The InflightRegistry entry of a request must be released before
// its EventSource is destroyed (declare the source first so the entry dies first).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_set>

#include <httplib.h>

#include "server/api_error.h"
#include "server/http_server.h"
#include "server/json_io.h"
#include "server/metrics.h"

namespace keel::server {

// The requests in flight on HTTP threads, so shutdown can wait for them and then cancel.
class InflightRegistry {
 public:
  class Entry {
   public:
    Entry() = default;
    Entry(InflightRegistry* registry, EventSource* source) : registry_(registry), source_(source) {}
    Entry(Entry&& other) noexcept { *this = std::move(other); }
    Entry& operator=(Entry&& other) noexcept;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() { reset(); }
    void reset();

   private:
    InflightRegistry* registry_ = nullptr;
    EventSource* source_ = nullptr;
  };

  Entry add(EventSource* source);
  size_t size() const;
  // True when the registry became empty within `timeout`.
  bool wait_empty(std::chrono::milliseconds timeout);
  void cancel_all();

 private:
  void remove(EventSource* source);

  mutable std::mutex mutex_;
  std::condition_variable empty_;
  std::unordered_set<EventSource*> sources_;  // guarded by mutex_
};

struct HttpServer::State {
  explicit State(const ServerOptions& o) : options(o) {}

  ServerOptions options;
  httplib::Server http;
  ServerCounters counters;
  InflightRegistry inflight;
  std::atomic<bool> draining{false};  // no new completions
  // Listening lifecycle: run() and shutdown() may race (a signal during start-up).
  std::mutex run_mutex;
  bool stopped = false;      // guarded by run_mutex: no (more) listening
  bool run_entered = false;  // guarded by run_mutex: run() is past its stopped check
  std::atomic<bool> run_returned{false};

  std::shared_ptr<InferenceService> service() const {
    std::lock_guard<std::mutex> lock(service_mutex);
    return service_;
  }
  void set_service(std::shared_ptr<InferenceService> s) {
    std::lock_guard<std::mutex> lock(service_mutex);
    service_ = std::move(s);
  }

 private:
  mutable std::mutex service_mutex;
  std::shared_ptr<InferenceService> service_;  // guarded by service_mutex; null while loading
};

void send_json(httplib::Response& res, const json& body, int status = 200);
void send_error(httplib::Response& res, const ApiError& error);

// The loaded model's service, or throws ApiError 503 while loading / shutting down.
std::shared_ptr<InferenceService> require_service(const HttpServer::State& state);

// Runs `body` and turns any keel::Error into an OpenAI error response.
template <typename Fn>
void guarded(httplib::Response& res, Fn&& body) {
  try {
    body();
  } catch (const keel::Error& e) {
    send_error(res, from_error(e));
  } catch (const std::exception& e) {
    send_error(res, internal_error(std::string("internal error: ") + e.what()));
  }
}

void add_completion_routes(HttpServer::State& state);
void add_info_routes(HttpServer::State& state);
void add_llama_routes(HttpServer::State& state);  // POST /completion (routes_llama.cpp)
void add_responses_routes(HttpServer::State& state);  // POST /v1/responses (routes_responses.cpp)
void add_anthropic_routes(HttpServer::State& state);  // POST /v1/messages (routes_anthropic.cpp)

}  // namespace keel::server
