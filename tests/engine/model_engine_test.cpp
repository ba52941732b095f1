// The engine over real models (stories260K, the trained one; the llama and qwen3 reference
// sets, random weights): reference greedy text, batch/chunk/cache invariance against solo
// runs, cancellation with cache reuse, fault injection inside the forward pass, and the
// memory plan.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "core/error.h"
#include "core/fault.h"
#include "engine/model_backend.h"
#include "engine_test_util.h"
#include "hooked_backend.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace keel::engine::test {
namespace {

std::string stories_path() { return keel::test::shared_dir() + "/models/stories260K.gguf"; }

LoadOptions load_options(const std::string& path, int32_t parallel, int32_t batch, int32_t ctx = 256) {
  LoadOptions o;
  o.model_path = path;
  o.engine.n_parallel = parallel;
  o.engine.batch_tokens = batch;
  o.engine.n_ctx = ctx;
  o.engine.max_queue = 256;
  o.engine.threads = 1;  // the concurrent workloads use 2: results must not depend on it
  o.engine.check_kv = true;
  o.mem_limit_bytes = 1ull << 30;
  return o;
}

// Loaded once per model; every test starts its own engines (own KV cache) on it.
const LoadedModel& loaded(const std::string& path) {
  static std::map<std::string, LoadedModel> cache;
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, open_model(load_options(path, 1, 64))).first;
  return it->second;
}

std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream f(path);
  std::vector<int32_t> ids;
  int32_t v;
  while (f >> v) ids.push_back(v);
  return ids;
}

Outcome run_solo(const std::string& path, const Request& r, int32_t batch = 512, int32_t ctx = 256) {
  LoadOptions o = load_options(path, 1, batch, ctx);
  auto engine = start_engine(loaded(path), o);
  RequestHandle h = engine->submit(r);
  return collect(h);
}

TEST(ModelEngine, StoriesGreedyTextEqualsTheReference) {
  std::vector<int32_t> ids = read_ids(keel::test::reference_path("stories260K", "generate-tokens.txt"));
  ASSERT_EQ(ids.size(), 69u);
  std::vector<int32_t> prompt(ids.begin(), ids.begin() + 5), want(ids.begin() + 5, ids.end());
  Request r = make_request(prompt, 64);
  r.ignore_eos = true;
  for (int32_t batch : {512, 2}) {  // one chunk, and a prompt prefilled 2 tokens at a time
    Outcome out = run_solo(stories_path(), r, batch);
    EXPECT_EQ(out.tokens, want) << "batch " << batch;
    EXPECT_EQ(out.reason, FinishReason::kLength);
    EXPECT_EQ(out.text.rfind(", there was a little girl named Lily.", 0), 0u) << out.text;
  }
}

// Scoring a prompt (prompt_logprobs, max_tokens 0 = prefill only) gives, for tokens the
// model generated itself, exactly the logprobs it reported when it generated them —
// whatever the chunking, the scored-rows cap and what runs beside it — and matches the
// reference implementation's logits on the reference tokens.
TEST(ModelEngine, ScoredPromptEqualsGenerationLogprobsAndTheReference) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  Request gen = make_request(prompt, 40);
  gen.ignore_eos = true;
  gen.sampling.logprobs = true;
  gen.sampling.top_logprobs = 3;
  const Outcome generated = run_solo(stories_path(), gen);
  ASSERT_EQ(generated.logprobs.size(), 40u);
  std::vector<int32_t> text = prompt;
  text.insert(text.end(), generated.tokens.begin(), generated.tokens.end());
  Request score = make_request(text, 0);
  score.prompt_logprobs = 3;
  for (int32_t batch : {512, 7}) {
    LoadOptions o = load_options(stories_path(), 2, batch);
    auto engine = start_engine(loaded(stories_path()), o);
    RequestHandle beside = engine->submit(make_request(prompt, 30, 5, 0.8f));
    RequestHandle h = engine->submit(score);
    const Outcome scored = collect(h);
    EXPECT_EQ(collect(beside).reason, FinishReason::kLength);
    ASSERT_EQ(scored.reason, FinishReason::kLength) << scored.error;
    EXPECT_TRUE(scored.tokens.empty());
    EXPECT_EQ(scored.usage.completion_tokens, 0);
    EXPECT_EQ(scored.usage.cached_tokens, 0);  // scored prompts are computed in full
    ASSERT_EQ(scored.prompt_logprobs.size(), text.size() - 1);
    for (size_t i = 0; i < generated.logprobs.size(); ++i) {
      const TokenLogprob& want = generated.logprobs[i];
      const TokenLogprob& got = scored.prompt_logprobs[prompt.size() - 1 + i];
      EXPECT_EQ(got.token, want.token) << i;
      EXPECT_EQ(got.logprob, want.logprob) << "batch " << batch << " token " << i;
      EXPECT_EQ(got.top, want.top) << i;
      EXPECT_EQ(got.text, want.text);
    }
  }
  // Against the reference implementation's logits (flash attention, f16 KV there).
  const std::vector<int32_t> ref_tokens = read_ids(keel::test::reference_path("stories260K", "tokens.txt"));
  std::ifstream f(keel::test::reference_path("stories260K", "logits-fa.f32"), std::ios::binary);
  std::vector<float> ref(ref_tokens.size() * 512);
  f.read(reinterpret_cast<char*>(ref.data()), static_cast<std::streamsize>(ref.size() * sizeof(float)));
  ASSERT_TRUE(f);
  Request ref_score = make_request(ref_tokens, 0);
  ref_score.prompt_logprobs = 0;
  const Outcome scored = run_solo(stories_path(), ref_score);
  ASSERT_EQ(scored.prompt_logprobs.size(), ref_tokens.size() - 1);
  double worst = 0;
  for (size_t i = 0; i + 1 < ref_tokens.size(); ++i) {
    const float* row = ref.data() + i * 512;
    double m = row[0], sum = 0;
    for (int t = 0; t < 512; ++t) m = std::max(m, static_cast<double>(row[t]));
    for (int t = 0; t < 512; ++t) sum += std::exp(row[t] - m);
    const double want = row[ref_tokens[i + 1]] - m - std::log(sum);
    worst = std::max(worst, std::abs(want - scored.prompt_logprobs[i].logprob));
    EXPECT_TRUE(scored.prompt_logprobs[i].top.empty());
  }
  EXPECT_LT(worst, 0.05);
  std::printf("[scored prompt] max |logprob - reference| %.5f over %zu tokens\n", worst, ref_tokens.size() - 1);
}

// Concurrent requests with shared prefixes, several chunk budgets, some served from the
// cache: every output bitwise equal (same tokens) to the request's solo run.
// Every repeated request must hit the prefix cache (sliding-window models too: their
// window pages of these short prompts are still held).
void mixed_workload_equals_solo(const std::string& path) {
  std::vector<int32_t> system = read_ids(keel::test::reference_path("llama", "tokens.txt"));
  ASSERT_GE(system.size(), 40u);
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> p(system.begin(), system.begin() + (i % 3 == 0 ? 12 + i : 40));
    std::vector<int32_t> tail = random_prompt(static_cast<uint64_t>(i), 2 + i % 5, 500);
    p.insert(p.end(), tail.begin(), tail.end());
    Request r = make_request(p, 5 + i % 4, 77 + static_cast<uint64_t>(i), i % 2 ? 0.9f : 0.0f);
    r.ignore_eos = true;
    requests.push_back(r);
  }
  std::vector<Outcome> solo;
  for (const Request& r : requests) solo.push_back(run_solo(path, r));
  for (int32_t batch : {7, 64}) {
    LoadOptions o = load_options(path, 4, batch);
    o.engine.threads = 2;  // the solo runs used 1
    auto engine = start_engine(loaded(path), o);
    std::vector<Outcome> outs(requests.size());
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        std::vector<std::pair<size_t, RequestHandle>> mine;
        for (size_t i = static_cast<size_t>(t); i < requests.size(); i += 2) mine.emplace_back(i, engine->submit(requests[i]));
        for (auto& [i, h] : mine) outs[i] = collect(h);
      });
    }
    for (auto& th : threads) th.join();
    // A second round is served from the prefix cache.
    std::vector<RequestHandle> second;
    for (const Request& r : requests) second.push_back(engine->submit(r));
    std::vector<Outcome> again;
    for (RequestHandle& h : second) again.push_back(collect(h));
    int64_t cached = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(outs[i].tokens, solo[i].tokens) << path << " batch " << batch << " request " << i;
      EXPECT_EQ(again[i].tokens, solo[i].tokens) << path << " batch " << batch << " cached request " << i;
      EXPECT_GT(again[i].usage.cached_tokens, 0) << "request " << i;
      cached += again[i].usage.cached_tokens;
    }
    EXPECT_GT(cached, 60);
    std::printf("%s batch %d: %lld prompt tokens from the cache in the second round\n", path.c_str(), batch,
                static_cast<long long>(cached));
  }
}

TEST(ModelEngine, MixedWorkloadEqualsSoloRunsOnStories) { mixed_workload_equals_solo(stories_path()); }
TEST(ModelEngine, MixedWorkloadEqualsSoloRunsOnLlama) {
  mixed_workload_equals_solo(keel::test::reference_path("llama", "model.gguf"));
}
TEST(ModelEngine, MixedWorkloadEqualsSoloRunsOnQwen3) {
  mixed_workload_equals_solo(keel::test::reference_path("qwen3", "model.gguf"));
}
// Sliding window 8 (gemma3: 5 local : 1 global layers; gpt-oss: every other layer, MoE,
// sinks): prompts of 14..47 tokens cross it, and cached prefixes are reused across it.
TEST(ModelEngine, MixedWorkloadEqualsSoloRunsOnGemma3) {
  mixed_workload_equals_solo(keel::test::reference_path("gemma3", "model.gguf"));
}
TEST(ModelEngine, MixedWorkloadEqualsSoloRunsOnGptOss) {
  mixed_workload_equals_solo(keel::test::reference_path("gpt-oss", "model.gguf"));
}

// Incident 002 at the engine level: a long cached prompt, then requests sharing a shorter
// prefix of it and diverging (the cache is attached up to the divergence), f16 and q8_0
// K/V with flash attention: every output equals a fresh engine's. On the full-attention
// model the shared part comes from the cache; on the sliding-window one (window 16) only
// what the cache still holds the window of may be reused (so the count is printed, and
// correctness is what is required).
void diverging_prefixes_equal_fresh_runs(const std::string& set, bool full_attention) {
  const std::string path = keel::test::reference_path(set, "model.gguf");
  std::vector<int32_t> long_prompt = random_prompt(21, 160, 500);
  std::vector<Request> requests = {make_request(long_prompt, 4)};
  for (size_t cut : {120, 61, 17, 3}) {
    std::vector<int32_t> p(long_prompt.begin(), long_prompt.begin() + static_cast<long>(cut));
    std::vector<int32_t> tail = random_prompt(cut, 9, 500);
    p.insert(p.end(), tail.begin(), tail.end());
    requests.push_back(make_request(p, 4, cut, 0.8f));
  }
  for (tensor::DType kv_type : {tensor::DType::kF16, tensor::DType::kQ8_0}) {
    LoadOptions o = load_options(path, 2, 64, 512);
    o.k_type = o.v_type = kv_type;
    o.engine.flash_attention = true;
    auto engine = start_engine(loaded(path), o);
    int64_t cached = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i].ignore_eos = true;
      RequestHandle h = engine->submit(requests[i]);
      Outcome got = collect(h);
      auto fresh = start_engine(loaded(path), o);
      RequestHandle f = fresh->submit(requests[i]);
      Outcome want = collect(f);
      EXPECT_EQ(got.tokens, want.tokens) << set << " " << tensor::dtype_name(kv_type) << " request " << i;
      if (full_attention && i > 0) {
        EXPECT_GE(got.usage.cached_tokens, 3) << set << " " << tensor::dtype_name(kv_type) << " request " << i;
      }
      cached += got.usage.cached_tokens;
    }
    std::printf("%s %s: %lld prompt tokens reused from the cache\n", set.c_str(), tensor::dtype_name(kv_type),
                static_cast<long long>(cached));
    EXPECT_EQ(engine->stats().empty_attention_rows, 0);
  }
}

TEST(ModelEngine, DivergingFromALongCachedPrefixEqualsFreshRunsQwen3) {
  diverging_prefixes_equal_fresh_runs("qwen3", true);
}
TEST(ModelEngine, DivergingFromALongCachedPrefixEqualsFreshRunsGemma3Long) {
  diverging_prefixes_equal_fresh_runs("gemma3-long", false);
}

TEST(ModelEngine, DecoderRendersControlTokensOnlyWhenAsked) {
  // Request::render_special_tokens: what lets a reader of a format's markers (harmony) see them.
  const std::string path = stories_path();
  const LoadedModel& m = loaded(path);
  ModelBackend backend(m.model, m.tokenizer, load_options(path, 1, 32));
  const int32_t bos = 1;  // "<s>", a control token of the stories vocabulary
  const int32_t once = m.tokenizer->encode("Once", {.add_bos = false, .add_eos = std::nullopt, .parse_special = false})[0];
  auto plain = backend.make_decoder(false);
  const std::string text = plain->push(bos) + plain->push(once) + plain->finish();
  EXPECT_NE(text.find("Once"), std::string::npos);
  EXPECT_EQ(text.find("<s>"), std::string::npos);
  auto rendered = backend.make_decoder(true);
  EXPECT_EQ(rendered->push(bos) + rendered->push(once) + rendered->finish(), "<s>" + text);
}

TEST(ModelEngine, CancelDuringPrefillKeepsTheComputedPrefixForTheRetry) {
  const std::string path = stories_path();
  std::vector<int32_t> prompt = random_prompt(5, 150, 500);
  prompt.insert(prompt.begin(), 1);
  Request r = make_request(prompt, 6, 3, 0.8f);
  Outcome solo = run_solo(path, r);
  LoadOptions o = load_options(path, 1, 32);
  const LoadedModel& m = loaded(path);
  RequestHandle h;
  std::mutex h_mutex;  // h is assigned on this thread, read by the hook on the engine's
  int calls = 0;
  auto backend = std::make_unique<HookedBackend>(std::make_unique<ModelBackend>(m.model, m.tokenizer, o),
                                                 [&](std::span<const BatchEntry>) {
    std::lock_guard<std::mutex> lock(h_mutex);
    if (++calls == 3) h.cancel();  // the third chunk still completes; no fourth
  });
  Engine engine(std::move(backend), o.engine);
  {
    std::lock_guard<std::mutex> lock(h_mutex);
    h = engine.submit(r);
  }
  Outcome cancelled = collect(h);
  EXPECT_EQ(cancelled.reason, FinishReason::kCancelled);
  EXPECT_EQ(calls, 3);
  RequestHandle retry = engine.submit(r);
  Outcome out = collect(retry);
  EXPECT_EQ(out.tokens, solo.tokens);
  EXPECT_EQ(out.usage.cached_tokens, 96);  // the three computed chunks
  // And a retry of the finished request reuses all but the last prompt token.
  RequestHandle again = engine.submit(r);
  Outcome third = collect(again);
  EXPECT_EQ(third.tokens, solo.tokens);
  EXPECT_EQ(third.usage.cached_tokens, static_cast<int64_t>(prompt.size()) - 1);
}

TEST(ModelEngine, FaultsInsideTheForwardPassFailOnlyTheirRequests) {
  const std::string path = stories_path();
  const int kRequests = 160;
  std::vector<Request> requests;
  for (int i = 0; i < kRequests; ++i) {
    std::vector<int32_t> p = {1};
    std::vector<int32_t> tail = random_prompt(static_cast<uint64_t>(i % 10), 4 + i % 12, 500);
    p.insert(p.end(), tail.begin(), tail.end());
    Request r = make_request(p, 3, static_cast<uint64_t>(i), 0.7f);
    r.ignore_eos = true;
    requests.push_back(r);
  }
  // Two kernel threads: the fault point sits in ThreadPool::parallel_for, which the
  // kernels skip (running inline) when there is only one thread.
  LoadOptions faulty = load_options(path, 4, 16);
  faulty.engine.threads = 2;
  auto engine = start_engine(loaded(path), faulty);
  std::vector<RequestHandle> handles;
  std::vector<Outcome> outs;
  int64_t injected0 = faults_injected();
  fault_configure({"kernel", 0.003, 7});
  for (const Request& r : requests) handles.push_back(engine->submit(r));
  for (RequestHandle& h : handles) outs.push_back(collect(h));
  fault_disable();
  int64_t injected = faults_injected() - injected0;
  int errors = 0;
  // Reference outputs from a fresh engine without faults (requests repeat every 10).
  auto fresh = start_engine(loaded(path), load_options(path, 4, 64));
  std::vector<std::pair<int, RequestHandle>> checks;
  for (int i = 0; i < kRequests; ++i) {
    if (outs[i].reason == FinishReason::kError) {
      ++errors;
      EXPECT_NE(outs[i].error.find("injected fault at kernel"), std::string::npos) << outs[i].error;
    } else {
      checks.emplace_back(i, fresh->submit(requests[i]));
    }
  }
  for (auto& [i, h] : checks) EXPECT_EQ(outs[i].tokens, collect(h).tokens) << "request " << i;
  std::printf("model fault injection: %d requests, %lld faults injected inside forward, %d failed\n", kRequests,
              static_cast<long long>(injected), errors);
  EXPECT_GT(injected, 0);
  EXPECT_GT(errors, 0);
  EXPECT_LT(errors, kRequests);
  // After the faults the same engine gives a fresh engine's output.
  for (int i = 0; i < 10; ++i) {
    RequestHandle a = engine->submit(requests[i]);
    RequestHandle b = fresh->submit(requests[i]);
    EXPECT_EQ(collect(a).tokens, collect(b).tokens);
  }
  EXPECT_EQ(engine->stats().empty_attention_rows, 0);
}

TEST(ModelEngine, ContextShiftRunsPastTheContext) {
  const std::string path = stories_path();
  LoadOptions o = load_options(path, 1, 64, 64);
  o.engine.context_shift = true;
  o.engine.n_keep = 4;
  auto engine = start_engine(loaded(path), o);
  Request r = make_request({1, 403, 407, 261, 378}, 150);
  r.ignore_eos = true;
  RequestHandle h = engine->submit(r);
  Outcome out = collect(h);
  EXPECT_EQ(out.reason, FinishReason::kLength);
  EXPECT_EQ(out.tokens.size(), 150u);
}

TEST(ModelEngine, MemoryPlanRefusesAndNamesWhatFits) {
  const std::string path = keel::test::reference_path("qwen3", "model.gguf");  // head_dim 32: q8_0 KV possible
  LoadOptions o = load_options(path, 4, 512, 8192);
  const LoadedModel& m = loaded(path);
  MemoryPlan roomy = plan_model_memory(*m.model, o);
  EXPECT_TRUE(roomy.fits) << roomy.to_text();
  EXPECT_GT(roomy.kv_bytes, 0u);
  // A limit just below the plan: refused, with alternatives that fit.
  o.mem_limit_bytes = roomy.total_bytes - 1;
  MemoryPlan tight = plan_model_memory(*m.model, o);
  EXPECT_FALSE(tight.fits);
  ASSERT_FALSE(tight.alternatives.empty()) << tight.to_text();
  EXPECT_EQ(tight.alternatives[0].flags, "-ctk q8_0 -ctv q8_0");
  LoadedModel copy = m;
  copy.plan = tight;
  try {
    start_engine(copy, o);
    FAIL() << "started an engine that does not fit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("q8_0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace keel::engine::test

namespace keel::engine::test {
namespace {

// Soak (KEEL_SOAK=1): random workloads on stories260K — shared prefixes, random budgets
// and slot counts, cancels from inside forward passes, faults inside kernels — every
// completed request equal to its solo run, every cancelled or failed one a prefix of it.
TEST(ModelEngine, SoakRandomWorkloadsAgainstSoloRuns) {
  const char* soak = std::getenv("KEEL_SOAK");
  if (!soak || std::string(soak) != "1") GTEST_SKIP() << "set KEEL_SOAK=1 (ctest -L soak)";
  const std::string path = stories_path();
  const LoadedModel& m = loaded(path);
  int total = 0, cancelled = 0, failed = 0;
  int64_t injected0 = faults_injected();
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull;
    auto rnd = [&](uint64_t n) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      return s % n;
    };
    LoadOptions o = load_options(path, 1 + static_cast<int32_t>(rnd(4)), 1 + static_cast<int32_t>(rnd(48)));
    o.engine.threads = 2;  // kernels reach the pool's fault point only with workers
    std::vector<int32_t> shared = random_prompt(seed, 60, 500);
    std::vector<Request> requests;
    for (int i = 0; i < 16; ++i) {
      std::vector<int32_t> p(shared.begin(), shared.begin() + static_cast<long>(rnd(60)));
      std::vector<int32_t> tail = random_prompt(seed * 100 + static_cast<uint64_t>(i), 1 + rnd(20), 500);
      p.insert(p.end(), tail.begin(), tail.end());
      Request r = make_request(p, 1 + static_cast<int32_t>(rnd(12)), seed * 7 + static_cast<uint64_t>(i),
                               rnd(2) ? 0.0f : 0.9f);
      r.ignore_eos = true;
      requests.push_back(r);
    }
    std::vector<RequestHandle> handles(requests.size());
    std::map<int, size_t> cancel_at;
    int calls = 0;
    std::mutex handles_mutex;  // the hook reads handles on the engine thread
    auto backend = std::make_unique<HookedBackend>(std::make_unique<ModelBackend>(m.model, m.tokenizer, o),
                                                   [&](std::span<const BatchEntry>) {
                                                     std::lock_guard<std::mutex> lock(handles_mutex);
                                                     auto it = cancel_at.find(++calls);
                                                     if (it != cancel_at.end()) handles[it->second].cancel();
                                                   });
    for (int k = 0; k < 3; ++k) cancel_at[1 + static_cast<int>(rnd(30))] = rnd(requests.size());
    Engine engine(std::move(backend), o.engine);
    fault_configure({"kernel", 0.002, seed});
    {
      std::lock_guard<std::mutex> lock(handles_mutex);
      for (size_t i = 0; i < requests.size(); ++i) handles[i] = engine.submit(requests[i]);
    }
    std::vector<Outcome> outs;
    for (RequestHandle& h : handles) outs.push_back(collect(h));
    fault_disable();
    for (size_t i = 0; i < requests.size(); ++i) {
      std::vector<int32_t> want = run_solo(path, requests[i]).tokens;
      ++total;
      if (outs[i].reason == FinishReason::kCancelled || outs[i].reason == FinishReason::kError) {
        (outs[i].reason == FinishReason::kCancelled ? cancelled : failed)++;
        EXPECT_LE(outs[i].tokens.size(), want.size());
        EXPECT_TRUE(std::equal(outs[i].tokens.begin(), outs[i].tokens.end(), want.begin())) << "seed " << seed;
      } else {
        EXPECT_EQ(outs[i].tokens, want) << "seed " << seed << " request " << i;
      }
    }
  }
  std::printf("model soak: %d requests, %d cancelled, %d failed, %lld faults injected\n", total, cancelled, failed,
              static_cast<long long>(faults_injected() - injected0));
  EXPECT_GT(failed, 0);
  EXPECT_GT(cancelled, 0);
}

}  // namespace
}  // namespace keel::engine::test
