// The heartbeat loop against a channel that stays silent for several intervals (incident
// 000): heartbeats arrive, nothing is cancelled, then the text arrives in full. No
// assertion depends on speed: the text is released by the test after the N-th heartbeat.
#include <gtest/gtest.h>

#include "fake_service.h"
#include "server/event_pump.h"

namespace keel::server {
namespace {

using test::ScriptedSource;
using engine::Event;
using engine::FinishReason;

constexpr PumpOptions kFast{std::chrono::milliseconds(5)};

TEST(EventPump, SilentPrefillGetsHeartbeatsThenTheFullTextAndIsNeverCancelled) {
  ScriptedSource source;
  std::string text;
  int heartbeats = 0;
  std::optional<FinishReason> finished;
  auto on_event = [&](const Event& e) {
    text += e.text;
    if (e.kind == Event::Kind::kFinish) finished = e.reason;
    return WriteResult::kWrote;
  };
  auto on_idle = [&] {
    if (++heartbeats == 4) {  // the "prefill" ends after four silent intervals
      source.push(ScriptedSource::delta("Once"));
      source.push(ScriptedSource::delta(" upon"));
      source.push(ScriptedSource::finish(FinishReason::kStop));
    }
    return true;
  };
  PumpStats stats;
  EXPECT_EQ(pump_events(source, kFast, on_event, on_idle, &stats), PumpResult::kFinished);
  EXPECT_EQ(heartbeats, 4);
  EXPECT_EQ(stats.heartbeats, 4);
  EXPECT_EQ(text, "Once upon");
  EXPECT_EQ(finished, FinishReason::kStop);
  EXPECT_FALSE(source.cancelled());
}

TEST(EventPump, FailedHeartbeatWriteCancelsAndReturnsAtOnce) {
  ScriptedSource source;
  int idle_calls = 0;
  auto on_event = [&](const Event&) { return WriteResult::kWrote; };
  auto on_idle = [&] { return ++idle_calls < 3; };  // the third write fails: client gone
  EXPECT_EQ(pump_events(source, kFast, on_event, on_idle), PumpResult::kWriteFailed);
  EXPECT_EQ(idle_calls, 3);
  EXPECT_TRUE(source.cancelled());
}

TEST(EventPump, FailedTokenWriteCancels) {
  ScriptedSource source;
  source.push(ScriptedSource::delta("a"));
  source.push(ScriptedSource::delta("b"));
  int writes = 0;
  auto on_event = [&](const Event&) { return ++writes == 2 ? WriteResult::kFailed : WriteResult::kWrote; };
  EXPECT_EQ(pump_events(source, kFast, on_event, [] { return true; }), PumpResult::kWriteFailed);
  EXPECT_TRUE(source.cancelled());
  EXPECT_EQ(writes, 2);
}

TEST(EventPump, EmptyDeltasDoNotResetTheHeartbeatTimer) {
  // A stream of deltas that write nothing (e.g. text withheld by a stop-string match) must
  // still produce heartbeats; the events are fed one per poll so the loop keeps polling.
  ScriptedSource source;
  int heartbeats = 0, events = 0;
  auto on_event = [&](const Event& e) {
    ++events;
    return e.kind == Event::Kind::kFinish ? WriteResult::kWrote : WriteResult::kNothing;
  };
  std::atomic<bool> stop{false};
  std::thread feeder([&] {
    while (!stop.load()) {
      source.push(ScriptedSource::delta(""));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  auto on_idle = [&] {
    if (++heartbeats == 3) {
      stop.store(true);
      source.push(ScriptedSource::finish(FinishReason::kLength));
    }
    return true;
  };
  EXPECT_EQ(pump_events(source, kFast, on_event, on_idle), PumpResult::kFinished);
  feeder.join();
  EXPECT_EQ(heartbeats, 3);
  EXPECT_GT(events, 1);
  EXPECT_FALSE(source.cancelled());
}

TEST(EventPump, FinishEndsTheLoopWithoutFurtherPolls) {
  ScriptedSource source;
  source.push(ScriptedSource::finish(FinishReason::kError, {}, "boom"));
  std::string error;
  auto on_event = [&](const Event& e) {
    error = e.error;
    return WriteResult::kWrote;
  };
  EXPECT_EQ(pump_events(source, kFast, on_event, [] { return true; }), PumpResult::kFinished);
  EXPECT_EQ(error, "boom");
  EXPECT_EQ(source.polls(), 1);
  EXPECT_FALSE(source.cancelled());
}

}  // namespace
}  // namespace keel::server
