#include "server/event_pump.h"

#include <algorithm>

namespace keel::server {

PumpResult pump_events(EventSource& source, const PumpOptions& options,
                       const std::function<WriteResult(const engine::Event&)>& on_event,
                       const std::function<bool()>& on_idle, PumpStats* stats) {
  using clock = std::chrono::steady_clock;
  const auto heartbeat = std::max(options.heartbeat, std::chrono::milliseconds(1));
  auto last_write = clock::now();
  for (;;) {
    const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - last_write);
    if (since >= heartbeat) {
      if (!on_idle()) {
        source.cancel();
        return PumpResult::kWriteFailed;
      }
      if (stats) ++stats->heartbeats;
      last_write = clock::now();
      continue;
    }
    // Wait only for what is left of the current heartbeat interval. A timeout here is a
    // poll: the request keeps running (never a cancel — incident 000).
    std::optional<engine::Event> event = source.next(heartbeat - since);
    if (!event) continue;
    if (stats) ++stats->events;
    const bool is_finish = event->kind == engine::Event::Kind::kFinish;
    const WriteResult written = on_event(*event);
    if (written == WriteResult::kFailed) {
      if (!is_finish) source.cancel();
      return PumpResult::kWriteFailed;
    }
    if (written == WriteResult::kWrote) last_write = clock::now();
    if (is_finish) return PumpResult::kFinished;
  }
}

}  // namespace keel::server
