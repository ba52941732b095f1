// Stream check — the same completion requested streamed and not, through the real HTTP
// server (server::HttpServer on a loopback port, OpenAI /v1/completions), so a plumbing
// bug between engine and client (incident 000's cancelled generator) shows as a
// difference instead of hiding behind the model.
//
// Contract:
//  - compare_stream() starts an HttpServer on 127.0.0.1 (any free port) over `service`,
//    sends the two requests one after the other (greedy, seed 0), and stops the server;
//    the service is left running. Throws keel::Error(kIo) when a request fails or the
//    server answers with an error status, naming the status and body.
//  - Thread-safety: uses only the service's thread-safe methods.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/service.h"

namespace keel::sweep {

struct StreamTexts {
  std::string whole;     // "stream": false
  std::string streamed;  // "stream": true, the text of every SSE chunk joined
  int64_t chunks = 0;    // SSE data events that carried text
};

struct StreamRequest {
  std::string prompt;
  int32_t max_tokens = 64;
  bool ignore_eos = true;
  int io_timeout_seconds = 600;
};

StreamTexts compare_stream(std::shared_ptr<server::InferenceService> service, const StreamRequest& request);

// The text of an SSE body of /v1/completions chunks (choices[0].text of each data event;
// comments, heartbeats and [DONE] skipped). Throws keel::Error(kInvalidFile) for an
// error event, naming it.
StreamTexts parse_sse_completion(const std::string& body);

}  // namespace keel::sweep
