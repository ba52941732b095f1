// Cancellation in each phase, prefix reuse after cancel, context overflow, stop strings —
// over the fake backend, checked against the fresh-recomputation oracle.
#include <gtest/gtest.h>

#include <atomic>

#include "core/error.h"
#include "engine_test_util.h"

namespace keel::engine::test {
namespace {

struct Rig {
  explicit Rig(EngineOptions o) {
    auto b = std::make_unique<FakeBackend>();
    fake = b.get();
    fake->eog_allowed = false;
    options = o;
    engine = std::make_unique<Engine>(std::move(b), o);
  }
  FakeBackend* fake;
  EngineOptions options;
  std::unique_ptr<Engine> engine;
};

void expect_matches(const Outcome& got, const Expected& want, const std::string& what) {
  EXPECT_EQ(got.reason, want.reason) << what;
  EXPECT_EQ(got.tokens, want.tokens) << what;
  EXPECT_EQ(got.text, want.text) << what;
  EXPECT_EQ(got.usage.completion_tokens, want.completion_tokens) << what;
}

TEST(EngineCancel, WhileQueued) {
  EngineOptions o;
  o.n_parallel = 1;
  Rig rig(o);
  Gate gate;
  gate.install(*rig.fake);
  RequestHandle a = rig.engine->submit(make_request({1, 2, 3}, 4));
  gate.wait_entered();
  RequestHandle b = rig.engine->submit(make_request({1, 4, 5}, 4));
  b.cancel();
  gate.open();
  Outcome ob = collect(b);
  EXPECT_EQ(ob.reason, FinishReason::kCancelled);
  EXPECT_TRUE(ob.tokens.empty());
  EXPECT_EQ(ob.usage.completion_tokens, 0);
  Outcome oa = collect(a);
  expect_matches(oa, oracle(*rig.fake, make_request({1, 2, 3}, 4), o.n_ctx), "a");
  EXPECT_EQ(rig.engine->stats().cancellations, 1);
}

// Cancel between prefill chunks; the computed chunks stay cached and a retry uses them.
TEST(EngineCancel, DuringPrefillKeepsComputedChunksForTheRetry) {
  EngineOptions o;
  o.batch_tokens = 8;
  Rig rig(o);
  std::vector<int32_t> prompt = random_prompt(7, 60, rig.fake->n_vocab());
  RequestHandle h;
  std::mutex h_mutex;  // h is assigned here and read by the hook on the engine thread
  std::atomic<int> calls{0};
  rig.fake->on_forward = [&](std::span<const BatchEntry>) {
    std::lock_guard<std::mutex> lock(h_mutex);
    if (++calls == 3) h.cancel();  // during the third chunk: it still completes
  };
  {
    std::lock_guard<std::mutex> lock(h_mutex);
    h = rig.engine->submit(make_request(prompt, 5));
  }
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kCancelled);
  EXPECT_TRUE(out.tokens.empty());
  EXPECT_EQ(calls.load(), 3);  // ended at the next step boundary, no fourth chunk
  EXPECT_EQ(rig.fake->live_sequences(), 0);
  rig.fake->on_forward = nullptr;

  Request retry = make_request(prompt, 5);
  RequestHandle r = rig.engine->submit(retry);
  Outcome again = collect(r);
  EXPECT_EQ(again.usage.cached_tokens, 24);  // three chunks of 8
  expect_matches(again, oracle(*rig.fake, retry, o.n_ctx), "retry");
  EXPECT_EQ(rig.engine->stats().cached_tokens, 24);
}

TEST(EngineCancel, DuringDecodeEndsAtTheNextStep) {
  EngineOptions o;
  o.n_ctx = 1 << 20;
  Rig rig(o);
  Request req = make_request({1, 9, 8, 7}, -1, 42, 0.9f);
  RequestHandle h = rig.engine->submit(req);
  std::vector<int32_t> seen;
  while (seen.size() < 20) {
    std::optional<Event> ev = h.next(std::chrono::seconds(30));
    ASSERT_TRUE(ev.has_value());
    ASSERT_EQ(ev->kind, Event::Kind::kDelta);
    seen.insert(seen.end(), ev->tokens.begin(), ev->tokens.end());
  }
  h.cancel();
  Outcome rest = collect(h);
  EXPECT_EQ(rest.reason, FinishReason::kCancelled);
  seen.insert(seen.end(), rest.tokens.begin(), rest.tokens.end());
  // What came out is exactly the start of the uncancelled output.
  req.max_tokens = static_cast<int32_t>(seen.size());
  Expected want = oracle(*rig.fake, req, o.n_ctx);
  EXPECT_EQ(seen, want.tokens);
  EXPECT_EQ(rig.fake->live_sequences(), 0);
  // The engine goes on: the next request equals a fresh run.
  Request next = make_request({1, 9, 8, 7}, 12, 42, 0.9f);
  RequestHandle n = rig.engine->submit(next);
  expect_matches(collect(n), oracle(*rig.fake, next, o.n_ctx), "after cancel");
}

TEST(EngineContext, OverflowFinishesWithLengthWithoutShift) {
  EngineOptions o;
  o.n_ctx = 24;
  Rig rig(o);
  Request req = make_request(random_prompt(3, 10, rig.fake->n_vocab()), -1);
  RequestHandle h = rig.engine->submit(req);
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kLength);
  EXPECT_EQ(out.usage.completion_tokens, 14);
  expect_matches(out, oracle(*rig.fake, req, o.n_ctx), "overflow");
}

TEST(EngineContext, ShiftKeepsGoingPastTheContext) {
  EngineOptions o;
  o.n_ctx = 24;
  o.context_shift = true;
  o.n_keep = 4;
  Rig rig(o);
  Request req = make_request(random_prompt(3, 10, rig.fake->n_vocab()), 100);
  RequestHandle h = rig.engine->submit(req);
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kLength);
  EXPECT_EQ(out.tokens.size(), 100u);
  // Up to the first shift the output equals the unshifted run's.
  Expected first = oracle(*rig.fake, req, o.n_ctx);
  ASSERT_EQ(first.tokens.size(), 14u);
  EXPECT_TRUE(std::equal(first.tokens.begin(), first.tokens.end(), out.tokens.begin()));
  EXPECT_EQ(rig.fake->live_sequences(), 0);
}

// A shift the cache serves only in part (a sliding window) makes the engine recompute the
// lost positions from its tokens: the output is the same as after a lossless shift.
TEST(EngineContext, ShiftThatLosesPositionsRecomputesThem) {
  EngineOptions o;
  o.n_ctx = 24;
  o.context_shift = true;
  o.n_keep = 2;
  std::vector<Outcome> outs;
  std::vector<int64_t> fed;
  for (size_t lose : {0, 5}) {
    Rig rig(o);
    rig.fake->shift_loses = lose;
    RequestHandle h = rig.engine->submit(make_request(random_prompt(4, 12, rig.fake->n_vocab()), 80, 3, 0.8f));
    outs.push_back(collect(h));
    rig.engine->shutdown(std::chrono::seconds(5));
    fed.push_back(rig.fake->forward_tokens);
  }
  EXPECT_EQ(outs[0].tokens.size(), 80u);
  EXPECT_EQ(outs[0].tokens, outs[1].tokens);
  EXPECT_GT(fed[1], fed[0]);  // the lost positions were fed again
}

TEST(EngineStop, StopStringAcrossTokensIsNeverEmitted) {
  std::vector<std::string> pieces = FakeBackend::default_pieces();
  Rig rig(EngineOptions{});
  // Force " the cat sat on the mat" (ids of the word pieces) over and over.
  std::vector<int32_t> words;
  for (const char* w : {" the", " cat", " sat", " on", " the", " mat", "."}) {
    words.push_back(static_cast<int32_t>(std::find(pieces.begin(), pieces.end(), w) - pieces.begin()));
  }
  const size_t n_prompt = 3;
  rig.fake->forced = [&](const std::vector<int32_t>& h) {
    return h.size() < n_prompt ? -1 : words[(h.size() - n_prompt) % words.size()];
  };
  Request req = make_request({1, 2, 3}, 40);
  req.stop = {"t on t", "zzz"};
  RequestHandle h = rig.engine->submit(req);
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kStop);
  EXPECT_EQ(out.text, " the cat sa");
  EXPECT_EQ(out.stop_word, "t on t");  // which stop string ended it
  EXPECT_EQ(out.tokens.size(), 5u);  // the token completing the stop is reported
  expect_matches(out, oracle(*rig.fake, req, rig.options.n_ctx), "stop");

  // A stop string that never completes is released at the end.
  Request tail = make_request({1, 2, 3}, 3);
  tail.stop = {" on the"};  // the text ends in " sat" + nothing: " on" never arrives
  RequestHandle t = rig.engine->submit(tail);
  const Outcome tail_out = collect(t);
  EXPECT_EQ(tail_out.text, " the cat sat");
  EXPECT_EQ(tail_out.reason, FinishReason::kLength);
  EXPECT_EQ(tail_out.stop_word, "");
}

TEST(EngineLogprobs, ReportedPerToken) {
  Rig rig(EngineOptions{});
  Request req = make_request({1, 2, 3}, 6, 5, 0.7f);
  req.sampling.logprobs = true;
  req.sampling.top_logprobs = 3;
  RequestHandle h = rig.engine->submit(req);
  Outcome out = collect(h);
  ASSERT_EQ(out.logprobs.size(), out.tokens.size());
  for (size_t i = 0; i < out.tokens.size(); ++i) {
    EXPECT_EQ(out.logprobs[i].token, out.tokens[i]);
    EXPECT_EQ(out.logprobs[i].text, rig.fake->token_piece(out.tokens[i]));
    EXPECT_LE(out.logprobs[i].logprob, 0.0f);
    EXPECT_EQ(out.logprobs[i].top.size(), 3u);
  }
}

// logprobs without alternatives (OpenAI's top_logprobs 0 or absent) still reports each
// chosen token's logprob: the same values as a run that also asks for alternatives.
TEST(EngineLogprobs, ChosenTokenLogprobWithoutAlternatives) {
  Rig rig(EngineOptions{});
  Request with_top = make_request({1, 2, 3}, 6, 5, 0.7f);
  with_top.sampling.logprobs = true;
  with_top.sampling.top_logprobs = 3;
  Request without = with_top;
  without.sampling.top_logprobs = 0;
  RequestHandle ha = rig.engine->submit(with_top);
  const Outcome a = collect(ha);
  RequestHandle hb = rig.engine->submit(without);
  const Outcome b = collect(hb);
  ASSERT_EQ(b.tokens, a.tokens);
  ASSERT_EQ(b.logprobs.size(), b.tokens.size());
  bool some_below_zero = false;
  for (size_t i = 0; i < b.tokens.size(); ++i) {
    EXPECT_TRUE(b.logprobs[i].top.empty());
    EXPECT_EQ(b.logprobs[i].logprob, a.logprobs[i].logprob) << "token " << i;
    some_below_zero = some_below_zero || b.logprobs[i].logprob < 0.0f;
  }
  EXPECT_TRUE(some_below_zero);  // the values are computed, not a default 0
}

}  // namespace
}  // namespace keel::engine::test
