#include "sweep/stream_check.h"

#include <sstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/http_server.h"

namespace keel::sweep {
namespace {

using json = nlohmann::json;

std::string post(httplib::Client& client, const json& body) {
  auto res = client.Post("/v1/completions", body.dump(), "application/json");
  if (!res) {
    throw Error(ErrorCode::kIo, "stream check: POST /v1/completions failed: " + httplib::to_string(res.error()));
  }
  if (res->status != 200) {
    throw Error(ErrorCode::kIo, "stream check: POST /v1/completions answered " + std::to_string(res->status) + ": " +
                                    res->body.substr(0, 500));
  }
  return res->body;
}

}  // namespace

StreamTexts parse_sse_completion(const std::string& body) {
  StreamTexts out;
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data:", 0) != 0) continue;  // comments (heartbeats), blank separators
    std::string data = line.substr(5);
    if (!data.empty() && data[0] == ' ') data.erase(0, 1);
    if (data == "[DONE]") break;
    const json j = json::parse(data, nullptr, false);
    if (j.is_discarded()) throw Error(ErrorCode::kInvalidFile, "stream check: SSE data is not JSON: " + data.substr(0, 200));
    if (j.contains("error")) throw Error(ErrorCode::kInvalidFile, "stream check: error event: " + j["error"].dump());
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) continue;  // usage chunk
    const json& choice = j["choices"][0];
    if (!choice.contains("text") || !choice["text"].is_string()) continue;
    const std::string text = choice["text"].get<std::string>();
    if (text.empty()) continue;
    out.streamed += text;
    ++out.chunks;
  }
  return out;
}

StreamTexts compare_stream(std::shared_ptr<server::InferenceService> service, const StreamRequest& request) {
  server::ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.io_timeout_seconds = request.io_timeout_seconds;
  server::HttpServer http(options);
  const int port = http.bind();
  std::thread runner([&] { http.run(); });
  http.set_service(std::move(service));

  StreamTexts texts;
  std::exception_ptr failure;
  try {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(request.io_timeout_seconds, 0);
    client.set_write_timeout(request.io_timeout_seconds, 0);
    json body = {{"prompt", request.prompt},     {"max_tokens", request.max_tokens}, {"temperature", 0},
                 {"seed", 0},                    {"ignore_eos", request.ignore_eos}, {"stream", false}};
    const json whole = json::parse(post(client, body));
    texts.whole = whole.at("choices").at(0).at("text").get<std::string>();
    body["stream"] = true;
    const StreamTexts streamed = parse_sse_completion(post(client, body));
    texts.streamed = streamed.streamed;
    texts.chunks = streamed.chunks;
  } catch (...) {
    failure = std::current_exception();
  }
  http.shutdown(std::chrono::milliseconds(0));
  runner.join();
  if (failure) std::rethrow_exception(failure);
  return texts;
}

}  // namespace keel::sweep
