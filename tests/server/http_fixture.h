// The HTTP server on a loopback port in front of a scripted fake service (fake_service.h),
// for the route tests: start() it, post_json() to it, script_next() the next reply.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_service.h"
#include "server/http_server.h"
#include "server/json_io.h"

namespace keel::server {

// Waits (bounded) for a condition another thread makes true.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// The event names and the data objects of an SSE body (`event: NAME` / `data: {...}` lines).
struct SseEvents {
  std::vector<std::string> names;
  std::vector<json> data;
};
inline SseEvents sse_events(const std::string& body) {
  SseEvents e;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("event: ", 0) == 0) e.names.push_back(line.substr(7));
    if (line.rfind("data: ", 0) == 0) e.data.push_back(json::parse(line.substr(6)));
  }
  return e;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions o = {}, bool ready = true) {
    o.port = 0;
    o.heartbeat_seconds = 0.02;
    o.max_inflight = o.max_inflight == 64 ? 4 : o.max_inflight;
    server_ = std::make_unique<HttpServer>(o);
    port_ = server_->bind();
    service_ = std::make_shared<test::FakeService>();
    if (ready) server_->set_service(service_);
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->shutdown(std::chrono::milliseconds(200));
    if (thread_.joinable()) thread_.join();
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    return c;
  }
  json post_json(const std::string& path, const std::string& body, int* status) {
    auto c = client();
    auto res = c.Post(path.c_str(), body, "application/json");
    if (!res) {
      *status = -1;
      return {};
    }
    *status = res->status;
    return json::parse(res->body);
  }
  // Installs a source the test controls for the next submit.
  std::shared_ptr<test::ScriptedSource> script_next() {
    auto s = std::make_shared<test::ScriptedSource>();
    service_->on_submit = [s](engine::Request) { return std::make_unique<test::SharedSource>(s); };
    return s;
  }
  // The next reply as these text pieces, then a normal stop.
  void script_pieces(const std::vector<std::string>& pieces, engine::Usage usage) {
    auto src = script_next();
    for (const std::string& p : pieces) src->push(test::ScriptedSource::delta(p));
    src->push(test::ScriptedSource::finish(engine::FinishReason::kStop, usage));
  }

  std::unique_ptr<HttpServer> server_;
  std::shared_ptr<test::FakeService> service_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace keel::server
