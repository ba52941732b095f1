#include "server/event_pump.h"

#include <algorithm>

namespace keel::server {

PumpResult pump_choices(std::span<EventSource* const> sources, const PumpOptions& options,
                        const std::function<WriteResult(size_t, const engine::Event&)>& on_event,
                        const std::function<bool()>& on_idle, PumpStats* stats) {
  using clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  const auto heartbeat = std::max(options.heartbeat, milliseconds(1));
  std::vector<char> finished(sources.size(), 0);
  size_t left = sources.size(), turn = 0;
  auto cancel_unfinished = [&] {
    for (size_t i = 0; i < sources.size(); ++i) {
      if (!finished[i]) sources[i]->cancel();
    }
  };
  auto last_write = clock::now();
  while (left > 0) {
    const auto since = std::chrono::duration_cast<milliseconds>(clock::now() - last_write);
    if (since >= heartbeat) {
      if (!on_idle()) {
        cancel_unfinished();
        return PumpResult::kWriteFailed;
      }
      if (stats) ++stats->heartbeats;
      last_write = clock::now();
      continue;
    }
    // Wait only for what is left of the current heartbeat interval. A timeout here is a
    // poll: the request keeps running (never a cancel — incident 000). With several
    // sources each is asked in turn, briefly, so none waits behind another.
    while (finished[turn]) turn = (turn + 1) % sources.size();
    const size_t i = turn;
    turn = (turn + 1) % sources.size();
    const milliseconds wait = sources.size() == 1 ? heartbeat - since : std::min(heartbeat - since, milliseconds(2));
    std::optional<engine::Event> event = sources[i]->next(wait);
    if (!event) continue;
    if (stats) ++stats->events;
    const bool is_finish = event->kind == engine::Event::Kind::kFinish;
    if (is_finish) {
      finished[i] = 1;
      --left;
    }
    const WriteResult written = on_event(i, *event);
    if (written == WriteResult::kFailed) {
      cancel_unfinished();
      return PumpResult::kWriteFailed;
    }
    if (written == WriteResult::kEnd) {
      cancel_unfinished();
      return PumpResult::kFinished;
    }
    if (written == WriteResult::kWrote) last_write = clock::now();
  }
  return PumpResult::kFinished;
}

PumpResult pump_events(EventSource& source, const PumpOptions& options,
                       const std::function<WriteResult(const engine::Event&)>& on_event,
                       const std::function<bool()>& on_idle, PumpStats* stats) {
  EventSource* one[] = {&source};
  return pump_choices(one, options, [&on_event](size_t, const engine::Event& ev) { return on_event(ev); }, on_idle,
                      stats);
}

}  // namespace keel::server
