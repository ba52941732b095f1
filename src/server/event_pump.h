// The loop between a request's event channel and an HTTP response: the fix for incident
// 000 lives here. Waiting is a poll (next(timeout)) that leaves the request running; a
// heartbeat is written whenever `heartbeat` passed with nothing else written; only a
// failed write cancels, and only explicitly.
//
// Contract:
//  - EventSource is the HTTP side of one request (RequestHandle in production, a fake in
//    tests). next() returns nullopt when nothing arrived in time and must not affect the
//    request; the source delivers exactly one Finish event, after which nothing follows.
//  - pump_events() calls on_event for every event (the Finish event last) and on_idle
//    when `heartbeat` has passed since the last successful write. A callback returning
//    false means the write failed (client gone): the source is cancelled and the pump
//    returns kWriteFailed at once; it never waits for the engine's Finish then.
//  - on_event returns whether something was written (kWrote) — an empty delta writes
//    nothing and so does not reset the heartbeat timer — or kFailed, or kEnd: the
//    response is complete without waiting for the rest (an error already written): the
//    sources not finished are cancelled and the pump returns kFinished.
//  - pump_choices() does the same for the n sources of an n-choice request: on_event gets
//    the source's index, and the pump returns once every source has finished (or at a
//    failed write / kEnd, cancelling those that have not).
//  - Runs on the calling (HTTP) thread; the callbacks run there too.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "engine/request.h"

namespace keel::server {

class EventSource {
 public:
  virtual ~EventSource() = default;
  virtual std::optional<engine::Event> next(std::chrono::milliseconds timeout) = 0;
  virtual void cancel() = 0;
};

enum class WriteResult { kWrote, kNothing, kFailed, kEnd };
enum class PumpResult { kFinished, kWriteFailed };

struct PumpOptions {
  std::chrono::milliseconds heartbeat{5000};  // > 0
};

struct PumpStats {
  int64_t heartbeats = 0;
  int64_t events = 0;
};

PumpResult pump_events(EventSource& source, const PumpOptions& options,
                       const std::function<WriteResult(const engine::Event&)>& on_event,
                       const std::function<bool()>& on_idle, PumpStats* stats = nullptr);
PumpResult pump_choices(std::span<EventSource* const> sources, const PumpOptions& options,
                        const std::function<WriteResult(size_t, const engine::Event&)>& on_event,
                        const std::function<bool()>& on_idle, PumpStats* stats = nullptr);

}  // namespace keel::server
