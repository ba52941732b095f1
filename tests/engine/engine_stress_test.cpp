// Fault injection over hundreds of requests, a concurrent mixed workload against solo
// runs, and a randomized scheduler test — all against the fresh-recomputation oracle.
// The long randomized run ("Soak" tests) runs only with KEEL_SOAK=1 (CTest label soak).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <thread>

#include "core/error.h"
#include "core/fault.h"
#include "engine_test_util.h"

namespace keel::engine::test {
namespace {

struct FaultGuard {
  explicit FaultGuard(double p, uint64_t seed) { fault_configure({"step", p, seed}); }
  ~FaultGuard() { fault_disable(); }
};

bool is_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

uint64_t next_rand(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

TEST(EngineFaults, HundredsOfRequestsUnderInjection) {
  const int kRequests = 300;
  EngineOptions o;
  o.n_parallel = 4;
  o.batch_tokens = 16;
  o.max_queue = kRequests;
  o.n_ctx = 256;
  o.check_kv = true;
  auto backend = std::make_unique<FakeBackend>();
  FakeBackend* fake = backend.get();
  Engine engine(std::move(backend), o);
  std::vector<Request> requests;
  std::vector<RequestHandle> handles;
  int64_t faults_before = faults_injected();
  int errors = 0, completed = 0;
  {
    FaultGuard faults(0.01, 1);
    for (int i = 0; i < kRequests; ++i) {
      std::vector<int32_t> prompt = random_prompt(static_cast<uint64_t>(i % 50), 5 + i % 37, fake->n_vocab());
      requests.push_back(make_request(prompt, 4 + i % 9, static_cast<uint64_t>(i), i % 3 ? 0.8f : 0.0f));
      handles.push_back(engine.submit(requests.back()));
    }
    for (int i = 0; i < kRequests; ++i) {
      Outcome out = collect(handles[i]);
      Expected want = oracle(*fake, requests[i], o.n_ctx);
      if (out.reason == FinishReason::kError) {
        ++errors;
        EXPECT_NE(out.error.find("injected fault"), std::string::npos) << out.error;
        EXPECT_TRUE(is_prefix(out.tokens, want.tokens)) << "request " << i;
      } else {
        ++completed;
        ASSERT_EQ(out.reason, want.reason) << "request " << i;
        ASSERT_EQ(out.tokens, want.tokens) << "request " << i;  // nothing lost or duplicated
        ASSERT_EQ(out.text, want.text) << "request " << i;
      }
    }
  }
  int64_t injected = faults_injected() - faults_before;
  std::printf("fault injection: %d requests, %lld faults injected, %d failed, %d completed\n", kRequests,
              static_cast<long long>(injected), errors, completed);
  EXPECT_GT(injected, 10);
  EXPECT_GT(errors, 10);
  EXPECT_GT(completed, kRequests / 2);
  EngineStats st = engine.stats();
  EXPECT_EQ(st.isolated_failures, errors);
  EXPECT_EQ(st.requests_finished[static_cast<int>(FinishReason::kError)], errors);
  // After the faults: same output as a fresh engine (the oracle), nothing leaked.
  for (int i = 0; i < 20; ++i) {
    RequestHandle h = engine.submit(requests[i]);
    Outcome out = collect(h);
    Expected want = oracle(*fake, requests[i], o.n_ctx);
    EXPECT_EQ(out.tokens, want.tokens);
    EXPECT_EQ(out.reason, want.reason);
  }
  engine.shutdown(std::chrono::seconds(10));
  EXPECT_EQ(fake->live_sequences(), 0);
}

// Concurrent submitters, shared prefixes, several batch budgets: every output equals its
// solo (oracle) output; cached prompt tokens are counted.
TEST(EngineDeterminism, MixedConcurrentWorkloadEqualsSolo) {
  for (int32_t batch : {3, 16, 512}) {
    EngineOptions o;
    o.n_parallel = 4;
    o.batch_tokens = batch;
    o.max_queue = 64;
    o.n_ctx = 200;
    auto backend = std::make_unique<FakeBackend>();
    FakeBackend* fake = backend.get();
    Engine engine(std::move(backend), o);
    std::vector<int32_t> system = random_prompt(99, 30, fake->n_vocab());
    std::vector<Request> requests;
    for (int i = 0; i < 24; ++i) {
      std::vector<int32_t> p = system;
      if (i % 4 == 0) p.resize(10 + i);  // some share only part of the prefix
      std::vector<int32_t> tail = random_prompt(static_cast<uint64_t>(i), 3 + i % 11, fake->n_vocab());
      p.insert(p.end(), tail.begin(), tail.end());
      Request r = make_request(p, 6 + i % 13, 1000 + static_cast<uint64_t>(i), i % 2 ? 1.0f : 0.0f);
      if (i % 5 == 0) r.stop = {"e", " the"};
      requests.push_back(r);
    }
    std::vector<Outcome> outcomes(requests.size());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::vector<std::pair<size_t, RequestHandle>> mine;
        for (size_t i = static_cast<size_t>(t); i < requests.size(); i += 4) mine.emplace_back(i, engine.submit(requests[i]));
        for (auto& [i, h] : mine) outcomes[i] = collect(h);
      });
    }
    for (auto& th : threads) th.join();
    int64_t cached = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      Expected want = oracle(*fake, requests[i], o.n_ctx);
      EXPECT_EQ(outcomes[i].tokens, want.tokens) << "batch " << batch << " request " << i;
      EXPECT_EQ(outcomes[i].text, want.text) << "batch " << batch << " request " << i;
      EXPECT_EQ(outcomes[i].reason, want.reason);
      cached += outcomes[i].usage.cached_tokens;
    }
    EXPECT_GT(cached, 0) << "shared prefixes were never reused";
    EXPECT_EQ(engine.stats().cached_tokens, cached);
    if (batch == 3) {
      EXPECT_LE(fake->max_batch, 3);
    }
  }
}

struct RandomRunSummary {
  int requests = 0, cancelled = 0, errors = 0, deadlines = 0;
  int64_t faults = 0;
};

// One random scenario: options, requests, cancels (some immediate, some from inside a
// forward pass), expired deadlines, optional fault injection.
RandomRunSummary random_run(uint64_t seed) {
  RandomRunSummary sum;
  uint64_t s = seed * 0x2545F4914F6CDD1Dull + 7;
  auto rnd = [&](uint64_t n) { return next_rand(&s) % n; };
  EngineOptions o;
  o.n_parallel = 1 + static_cast<int32_t>(rnd(5));
  o.batch_tokens = 1 + static_cast<int32_t>(rnd(24));
  o.n_ctx = 40 + static_cast<int32_t>(rnd(60));
  const int n_requests = 10 + static_cast<int>(rnd(30));
  o.max_queue = n_requests;
  o.check_kv = true;
  bool faults_on = rnd(3) == 0;
  auto backend = std::make_unique<FakeBackend>();
  FakeBackend* fake = backend.get();
  fake->eog_allowed = rnd(2) == 0;
  Engine engine(std::move(backend), o);

  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 3; ++i) prefixes.push_back(random_prompt(seed * 10 + i, 1 + rnd(30), fake->n_vocab()));
  std::vector<Request> requests;
  std::vector<RequestHandle> handles;
  handles.reserve(n_requests);
  std::map<int64_t, std::vector<size_t>> cancel_at;  // forward call → requests to cancel
  std::mutex hook_mutex;
  int64_t calls = 0;
  fake->on_forward = [&](std::span<const BatchEntry>) {
    std::lock_guard<std::mutex> lock(hook_mutex);
    auto it = cancel_at.find(++calls);
    if (it != cancel_at.end()) {
      for (size_t i : it->second) handles[i].cancel();
    }
  };
  std::vector<bool> may_cancel(n_requests, false);
  {
    FaultGuard faults(faults_on ? 0.02 : 0.0, seed);
    int64_t injected0 = faults_injected();
    {
      std::lock_guard<std::mutex> lock(hook_mutex);  // the hook reads handles: no concurrent push
      for (int i = 0; i < n_requests; ++i) {
        std::vector<int32_t> p = prefixes[rnd(prefixes.size())];
        std::vector<int32_t> tail = random_prompt(seed * 1000 + i, rnd(12), fake->n_vocab());
        p.insert(p.end(), tail.begin(), tail.end());
        if (static_cast<int32_t>(p.size()) >= o.n_ctx) p.resize(o.n_ctx - 1);
        Request r = make_request(p, rnd(4) == 0 ? -1 : 1 + static_cast<int32_t>(rnd(30)), seed + i,
                                 rnd(2) ? 0.0f : 0.5f + static_cast<float>(rnd(100)) / 100.0f);
        if (rnd(4) == 0) r.stop = {std::string(1, static_cast<char>('a' + rnd(26)))};
        if (rnd(10) == 0) r.deadline = std::chrono::steady_clock::now();  // expired at once
        requests.push_back(r);
        handles.push_back(engine.submit(r));
        int kind = static_cast<int>(rnd(8));
        if (kind == 0) {
          handles.back().cancel();
          may_cancel[i] = true;
        } else if (kind == 1) {
          cancel_at[1 + static_cast<int64_t>(rnd(40))].push_back(static_cast<size_t>(i));
          may_cancel[i] = true;
        }
      }
    }
    for (int i = 0; i < n_requests; ++i) {
      Outcome out = collect(handles[i]);
      Expected want = oracle(*fake, requests[i], o.n_ctx);
      std::string where = "seed " + std::to_string(seed) + " request " + std::to_string(i);
      switch (out.reason) {
        case FinishReason::kCancelled:
          EXPECT_TRUE(may_cancel[i]) << where;
          EXPECT_TRUE(is_prefix(out.tokens, want.tokens)) << where;
          ++sum.cancelled;
          break;
        case FinishReason::kError:
          EXPECT_TRUE(faults_on) << where << ": " << out.error;
          EXPECT_TRUE(is_prefix(out.tokens, want.tokens)) << where;
          ++sum.errors;
          break;
        case FinishReason::kDeadline:
          EXPECT_TRUE(requests[i].deadline.has_value()) << where;
          EXPECT_TRUE(out.tokens.empty()) << where;
          ++sum.deadlines;
          break;
        default:
          EXPECT_EQ(out.reason, want.reason) << where;
          EXPECT_EQ(out.tokens, want.tokens) << where;
          EXPECT_EQ(out.text, want.text) << where;
          EXPECT_EQ(out.usage.completion_tokens, want.completion_tokens) << where;
      }
    }
    sum.faults = faults_injected() - injected0;
  }
  engine.shutdown(std::chrono::seconds(10));
  EXPECT_EQ(fake->live_sequences(), 0) << "seed " << seed;
  EngineStats st = engine.stats();
  int64_t finished = 0;
  for (int64_t n : st.requests_finished) finished += n;
  EXPECT_EQ(finished, n_requests) << "seed " << seed;
  sum.requests = n_requests;
  return sum;
}

void random_runs(uint64_t first, uint64_t count) {
  RandomRunSummary total;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    RandomRunSummary r = random_run(seed);
    total.requests += r.requests;
    total.cancelled += r.cancelled;
    total.errors += r.errors;
    total.deadlines += r.deadlines;
    total.faults += r.faults;
    if (::testing::Test::HasFailure()) {
      std::printf("failing seed: %llu\n", static_cast<unsigned long long>(seed));
      return;
    }
  }
  std::printf("randomized scheduler: %llu scenarios, %d requests, %d cancelled, %d failed by %lld injected faults, %d deadlines\n",
              static_cast<unsigned long long>(count), total.requests, total.cancelled, total.errors,
              static_cast<long long>(total.faults), total.deadlines);
}

TEST(EngineRandomized, SchedulerAgainstFreshRecomputation) { random_runs(1, 40); }

TEST(EngineRandomized, SoakSchedulerAgainstFreshRecomputation) {
  const char* soak = std::getenv("KEEL_SOAK");
  if (!soak || std::string(soak) != "1") GTEST_SKIP() << "set KEEL_SOAK=1 (ctest -L soak)";
  random_runs(1000, 2000);
}

}  // namespace
}  // namespace keel::engine::test
