// The engine over the fake backend: lifecycle, validation, busy, finish reasons.
#include <chrono>

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine_test_util.h"

namespace keel::engine::test {
namespace {

std::unique_ptr<Engine> make_engine(EngineOptions o, FakeBackend** out = nullptr) {
  auto backend = std::make_unique<FakeBackend>();
  if (out) *out = backend.get();
  return std::make_unique<Engine>(std::move(backend), o);
}

TEST(Engine, GeneratesUntilMaxTokensAndReportsUsage) {
  FakeBackend* fake = nullptr;
  EngineOptions o;
  o.n_ctx = 256;
  auto engine = make_engine(o, &fake);
  fake->eog_allowed = false;
  const auto before = std::chrono::steady_clock::now();
  RequestHandle h = engine->submit(make_request({1, 5, 6, 7}, 10));
  Outcome out = collect(h);
  const double lifetime_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - before).count();
  EXPECT_EQ(out.reason, FinishReason::kLength);
  EXPECT_EQ(out.tokens.size(), 10u);
  EXPECT_EQ(out.usage.prompt_tokens, 4);
  EXPECT_EQ(out.usage.completion_tokens, 10);
  EXPECT_EQ(out.usage.cached_tokens, 0);
  // The engine's times: a prefill and nine decode steps took some time, and both spans
  // lie within the request's life as the caller saw it (not a speed check).
  EXPECT_GT(out.usage.prompt_ms, 0.0);
  EXPECT_GT(out.usage.generation_ms, 0.0);
  EXPECT_LE(out.usage.prompt_ms + out.usage.generation_ms, lifetime_ms);
  // Greedy output is the fake model's argmax chain.
  std::vector<int32_t> history = {1, 5, 6, 7};
  std::string text;
  for (int32_t t : out.tokens) {
    std::vector<float> row = fake->logits_after(history);
    int32_t best = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    EXPECT_EQ(t, best);
    history.push_back(t);
    text += fake->token_piece(t);
  }
  EXPECT_EQ(out.text, text);
}

TEST(Engine, RejectsBadRequestsAtSubmit) {
  EngineOptions o;
  o.n_ctx = 16;
  auto engine = make_engine(o);
  auto code_of = [&](Request r) {
    try {
      engine->submit(std::move(r));
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;
  };
  EXPECT_EQ(code_of(make_request({}, 4)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(make_request(std::vector<int32_t>(16, 3), 4)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(make_request({1, 9999}, 4)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(make_request({1, -1}, 4)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(make_request({1, 2}, -2)), ErrorCode::kInvalidArgument);
  Request many_alternatives = make_request({1, 2}, 4);
  many_alternatives.prompt_logprobs = 21;
  EXPECT_EQ(code_of(many_alternatives), ErrorCode::kInvalidArgument);
  Request bad_temp = make_request({1, 2}, 4);
  bad_temp.sampling.temperature = -1;
  EXPECT_EQ(code_of(bad_temp), ErrorCode::kInvalidArgument);
  Request empty_stop = make_request({1, 2}, 4);
  empty_stop.stop = {""};
  EXPECT_EQ(code_of(empty_stop), ErrorCode::kInvalidArgument);
  // The longest prompt that leaves room for one token is accepted.
  RequestHandle ok = engine->submit(make_request(std::vector<int32_t>(15, 3), 4));
  Outcome out = collect(ok);
  EXPECT_NE(out.reason, FinishReason::kError);
  EXPECT_EQ(out.usage.completion_tokens, 1);  // the context is then full
  EXPECT_EQ(out.usage.generation_ms, 0.0);    // one token: nothing after the first
  EXPECT_EQ(out.reason, FinishReason::kLength);
}

TEST(Engine, PromptTooLongMessageNamesTheNumbers) {
  EngineOptions o;
  o.n_ctx = 8;
  auto engine = make_engine(o);
  try {
    engine->submit(make_request(std::vector<int32_t>(20, 3), 4));
    FAIL() << "accepted a prompt longer than the context";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("20 tokens"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds 8"), std::string::npos) << e.what();
  }
}

TEST(Engine, RejectsBadOptions) {
  EngineOptions o;
  o.n_parallel = 0;
  EXPECT_THROW(make_engine(o), Error);
  o = EngineOptions{};
  o.batch_tokens = 0;
  EXPECT_THROW(make_engine(o), Error);
  o = EngineOptions{};
  o.n_keep = o.n_ctx;
  EXPECT_THROW(make_engine(o), Error);
}

TEST(Engine, EndOfGenerationFinishesWithStopAndNoText) {
  FakeBackend* fake = nullptr;
  auto engine = make_engine(EngineOptions{}, &fake);
  // Force: two letters, then the end-of-generation token.
  fake->forced = [](const std::vector<int32_t>& h) { return h.size() >= 5 ? 0 : 2 + static_cast<int32_t>(h.size()); };
  RequestHandle h = engine->submit(make_request({1, 2, 3}, 50));
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kStop);
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(out.text, "de");
  EXPECT_EQ(out.usage.completion_tokens, 3);
}

TEST(Engine, QueueFullIsBusyAndTheQueueDrainsInOrder) {
  FakeBackend* fake = nullptr;
  EngineOptions o;
  o.n_parallel = 1;
  o.max_queue = 2;
  auto engine = make_engine(o, &fake);
  fake->eog_allowed = false;
  // Hold the engine inside its first forward until the queue is full.
  Gate gate;
  gate.install(*fake);
  std::vector<RequestHandle> handles;
  handles.push_back(engine->submit(make_request({1, 2}, 3)));
  gate.wait_entered();
  handles.push_back(engine->submit(make_request({1, 3}, 3)));
  handles.push_back(engine->submit(make_request({1, 4}, 3)));
  try {
    engine->submit(make_request({1, 5}, 3));
    FAIL() << "a full queue accepted a request";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBusy);
    EXPECT_NE(std::string(e.what()).find("--queue 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(engine->stats().queue_depth, 2);
  gate.open();
  for (RequestHandle& h : handles) EXPECT_EQ(collect(h).reason, FinishReason::kLength);
  // Room again.
  RequestHandle again = engine->submit(make_request({1, 5}, 3));
  EXPECT_EQ(collect(again).reason, FinishReason::kLength);
  EngineStats st = engine->stats();
  EXPECT_EQ(st.requests_finished[static_cast<int>(FinishReason::kLength)], 4);
  EXPECT_EQ(st.queue_depth, 0);
}

TEST(Engine, PollingWithTimeoutNeverCancels) {
  FakeBackend* fake = nullptr;
  auto engine = make_engine(EngineOptions{}, &fake);
  fake->eog_allowed = false;
  Gate gate;
  gate.install(*fake);
  RequestHandle h = engine->submit(make_request({1, 2, 3}, 5));
  gate.wait_entered();
  // Many timeouts while the engine is "inside a long prefill" (the incident's heartbeat).
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(h.next(std::chrono::milliseconds(1)).has_value());
  gate.open();
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kLength);
  EXPECT_EQ(out.tokens.size(), 5u);
}

TEST(Engine, ShutdownCancelsWhatIsLeftAndRefusesNewWork) {
  FakeBackend* fake = nullptr;
  EngineOptions o;
  o.n_ctx = 1 << 20;
  o.max_queue = 4;
  auto engine = make_engine(o, &fake);
  fake->eog_allowed = false;
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(engine->submit(make_request({1, 2 + i}, -1)));
  engine->shutdown(std::chrono::milliseconds(20));
  for (RequestHandle& h : handles) EXPECT_EQ(collect(h).reason, FinishReason::kCancelled);
  EXPECT_EQ(fake->live_sequences(), 0);
  try {
    engine->submit(make_request({1, 2}, 3));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBusy);
  }
  engine->shutdown(std::chrono::milliseconds(0));  // idempotent
}

TEST(Engine, ShutdownLetsShortRequestsFinish) {
  auto engine = make_engine(EngineOptions{});
  RequestHandle h = engine->submit(make_request({1, 2}, 4));
  engine->shutdown(std::chrono::seconds(30));
  Outcome out = collect(h);
  EXPECT_TRUE(out.reason == FinishReason::kLength || out.reason == FinishReason::kStop);
}

TEST(Engine, DroppingTheHandleCancelsAndFreesTheSlot) {
  FakeBackend* fake = nullptr;
  EngineOptions o;
  o.n_ctx = 1 << 20;
  o.n_parallel = 1;
  o.max_queue = 0;
  auto engine = make_engine(o, &fake);
  fake->eog_allowed = false;
  {
    RequestHandle h = engine->submit(make_request({1, 2}, -1));  // endless
    ASSERT_TRUE(h.next(std::chrono::seconds(30)).has_value());
  }
  // The only slot comes free once the engine sees the cancel; then a new request fits.
  RequestHandle next;
  for (int i = 0; i < 2000; ++i) {
    try {
      next = engine->submit(make_request({1, 3}, 2));
      break;
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kBusy);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  EXPECT_EQ(collect(next).reason, FinishReason::kLength);
  EXPECT_EQ(engine->stats().cancellations, 1);
}

TEST(Engine, DeadlineEndsQueuedAndRunningRequests) {
  FakeBackend* fake = nullptr;
  EngineOptions o;
  o.n_ctx = 1 << 20;
  o.n_parallel = 1;
  auto engine = make_engine(o, &fake);
  fake->eog_allowed = false;
  Request running = make_request({1, 2}, -1);
  running.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  Request queued = make_request({1, 3}, 5);
  queued.deadline = std::chrono::steady_clock::now();  // already past when the engine looks
  RequestHandle a = engine->submit(running);
  RequestHandle b = engine->submit(queued);
  Outcome oa = collect(a), ob = collect(b);
  EXPECT_EQ(oa.reason, FinishReason::kDeadline);
  EXPECT_GT(oa.tokens.size(), 0u);
  EXPECT_EQ(ob.reason, FinishReason::kDeadline);
  EXPECT_EQ(ob.tokens.size(), 0u);
}

TEST(Engine, StatsReportSlotStatesAndTokenCounts) {
  FakeBackend* fake = nullptr;
  EngineOptions o;
  o.n_parallel = 2;
  o.n_ctx = 1 << 20;
  auto engine = make_engine(o, &fake);
  fake->eog_allowed = false;
  std::vector<EngineStats> seen;  // stats() read on the engine thread inside forward passes
  fake->on_forward = [&](std::span<const BatchEntry>) {
    if (seen.size() < 4) seen.push_back(engine->stats());
  };
  RequestHandle h = engine->submit(make_request({1, 2, 3, 4}, 6));
  Outcome out = collect(h);
  engine->shutdown(std::chrono::seconds(5));
  ASSERT_EQ(seen.size(), 4u);
  // Snapshot after step 2 (seen[2], taken in step 3): generating, 4 prompt + 1 fed.
  const SlotSnapshot& s = seen[2].slots[0];
  EXPECT_STREQ(s.state, "generating");
  EXPECT_EQ(s.request_id, h.id());
  EXPECT_EQ(s.n_prompt, 4);
  EXPECT_EQ(s.n_past, 5);
  EXPECT_EQ(s.n_generated, 2);
  EXPECT_STREQ(seen[2].slots[1].state, "idle");
  EXPECT_EQ(seen[2].slots_busy, 1);
  EngineStats end = engine->stats();
  ASSERT_EQ(end.slots.size(), 2u);
  for (const SlotSnapshot& slot : end.slots) EXPECT_STREQ(slot.state, "idle");
  EXPECT_EQ(end.slots_busy, 0);
  EXPECT_EQ(end.prompt_tokens, 4);
  EXPECT_EQ(end.generated_tokens, 6);
  EXPECT_EQ(end.steps, 6);  // one prefill step, then five decode steps
  EXPECT_EQ(end.step_seconds_buckets.back(), 6.0);
  EXPECT_EQ(out.usage.completion_tokens, 6);
}

TEST(Engine, AFailingFinalFlushStillEndsWithOneFinishAndTheEngineGoesOn) {
  FakeBackend* fake = nullptr;
  auto engine = make_engine(EngineOptions{}, &fake);
  fake->eog_allowed = false;
  fake->decoder_finish_throws = true;
  RequestHandle h = engine->submit(make_request({1, 2, 3}, 3));
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kError);
  EXPECT_NE(out.error.find("flush failed"), std::string::npos) << out.error;
  fake->decoder_finish_throws = false;
  RequestHandle next = engine->submit(make_request({1, 2, 3}, 3));
  EXPECT_EQ(collect(next).reason, FinishReason::kLength);
  engine->shutdown(std::chrono::seconds(5));
  EXPECT_EQ(fake->live_sequences(), 0);
}

}  // namespace
}  // namespace keel::engine::test
