// Randomized programs on real reference models, oracle = fresh recomputation: random
// appends (several sequences per forward pass, chunks of random size), forks, truncates
// anywhere, releases, prefix caching, evictions and re-attaching through the prefix
// index; at checkpoints, every live sequence's next-token logits must be bitwise equal to
// those of a fresh cache fed the same tokens in one batch (same KV types, same attention
// path). Context shift is not part of these programs: a shifted sequence's K/V depend on
// the discarded tokens, so no fresh run reproduces them (kv_edit_test checks shift rows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "core/error.h"
#include "kv_model_util.h"
#include "support/paths.h"

namespace keel::kv::test {
namespace {

using tensor::DType;

struct ModelConfig {
  const char* set;  // reference set name
  DType k_type, v_type;
  bool flash;
  int32_t page;
};

void PrintTo(const ModelConfig& c, std::ostream* os) {
  *os << c.set << " K " << tensor::dtype_name(c.k_type) << " V " << tensor::dtype_name(c.v_type)
      << (c.flash ? " flash" : " plain") << " page " << c.page;
}

class ModelProgram {
 public:
  ModelProgram(const model::Model& m, const ModelConfig& cfg, uint64_t seed, ThreadPool& pool)
      : m_(m), cfg_(cfg), rng_(seed), pool_(pool), cache_(m.kv_layout(), options(cfg)) {}

  static KvOptions options(const ModelConfig& cfg) {
    KvOptions o;
    o.k_type = cfg.k_type;
    o.v_type = cfg.v_type;
    o.page_tokens = cfg.page;
    o.max_tokens = 1024;
    o.max_sequences = 7;  // 6 in the program + 1 for probing
    o.window_slack_tokens = cfg.page;
    o.max_batch_tokens = 64;
    return o;
  }

  void run(int n_ops, int check_every) {
    for (int op = 0; op < n_ops; ++op) {
      step_ = op;
      one_op();
      cache_.check_invariants();
      if ((op + 1) % check_every == 0 || op + 1 == n_ops) check_all();
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  int64_t checks() const { return checks_; }
  const std::map<std::string, int64_t>& stats() const { return stats_; }

 private:
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  // Few distinct tokens: prompts share prefixes often.
  TokenId token() { return static_cast<TokenId>(chance(0.7) ? 10 + uniform(0, 1) : uniform(1, 500)); }
  SeqId pick() {
    auto live = cache_.live_sequences();
    return live.empty() ? -1 : live[uniform(0, static_cast<int64_t>(live.size()) - 1)];
  }
  int n_live() const { return static_cast<int>(cache_.live_sequences().size()); }

  void check_all() {
    for (SeqId s : cache_.live_sequences()) {
      const auto& t = tokens_.at(s);
      const TokenId probe = static_cast<TokenId>(1 + (s * 37 + step_) % 400);
      const auto got = next_logits(m_, cache_, pool_, s, probe, cfg_.flash);
      const auto want = fresh_next_logits(m_, options(cfg_), pool_, t, probe, cfg_.flash);
      ASSERT_EQ(got.size(), want.size());
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "step " << step_ << ": seq " << s << " (" << t.size()
          << " tokens) logits differ from a fresh run";
      ++checks_;
    }
  }

  void one_op() {
    const int64_t r = uniform(0, 99);
    if (r < 35 || n_live() == 0) return append();
    if (r < 45) return fork();
    if (r < 60) return truncate();
    if (r < 68) return release();
    if (r < 80) return cache_prefix();
    if (r < 95) return attach();
    cache_.evict_prefixes(uniform(1, 3));
    ++stats_["evict"];
  }

  void append() {
    std::vector<std::pair<SeqId, std::vector<TokenId>>> work;
    if (n_live() == 0 || (n_live() < 6 && chance(0.3))) {
      const SeqId s = cache_.create();
      tokens_[s] = {};
      work.push_back({s, {}});
    }
    for (int i = uniform(1, 2); i > 0 && n_live() > 0; --i) {
      const SeqId s = pick();
      bool dup = false;
      for (auto& w : work) dup |= w.first == s;
      if (!dup) work.push_back({s, {}});
    }
    for (auto& [s, t] : work) {
      const int64_t n = uniform(1, tokens_[s].size() > 100 ? 2 : 12);
      for (int64_t i = 0; i < n; ++i) t.push_back(token());
    }
    feed_batch(m_, cache_, pool_, work, cfg_.flash);
    for (auto& [s, t] : work) tokens_[s].insert(tokens_[s].end(), t.begin(), t.end());
    ++stats_["append"];
  }

  void fork() {
    if (n_live() >= 6) return release();
    const SeqId src = pick();
    if (src < 0) return;
    const int64_t n = uniform(0, cache_.length(src));
    const SeqId d = cache_.fork(src, n);
    const int64_t got = cache_.length(d);
    ASSERT_TRUE(got == n || got == 0);
    tokens_[d].assign(tokens_[src].begin(), tokens_[src].begin() + got);
    ++stats_["fork"];
  }

  void truncate() {
    const SeqId s = pick();
    if (s < 0) return;
    const int64_t len = cache_.length(s);
    const int64_t n = chance(0.5) ? uniform(std::max<int64_t>(0, len - 8), len) : uniform(0, len);
    const int64_t got = cache_.truncate(s, n);
    ASSERT_TRUE(got == n || got == 0);
    tokens_[s].resize(got);
    ++stats_["truncate"];
  }

  void release() {
    const SeqId s = pick();
    if (s < 0) return;
    cache_.release(s);
    tokens_.erase(s);
    ++stats_["release"];
  }

  void cache_prefix() {
    const SeqId s = pick();
    if (s < 0) return;
    const auto& t = tokens_[s];
    const std::vector<TokenId> prefix(t.begin(), t.begin() + uniform(0, t.size()));
    cache_.cache_prefix(s, prefix);
    remembered_.push_back(prefix);
    if (remembered_.size() > 12) remembered_.erase(remembered_.begin());
    ++stats_["cache_prefix"];
  }

  void attach() {
    if (n_live() >= 6 || remembered_.empty()) return append();
    std::vector<TokenId> t = remembered_[uniform(0, static_cast<int64_t>(remembered_.size()) - 1)];
    t.resize(uniform(t.size() / 2, t.size()));
    for (int64_t i = uniform(0, 4); i > 0; --i) t.push_back(token());
    const int64_t n = cache_.lookup_prefix(t).n_tokens;
    const SeqId s = cache_.attach_prefix(t, n);
    tokens_[s].assign(t.begin(), t.begin() + n);
    ++stats_[n > 0 ? "attach" : "attach_empty"];
  }

  const model::Model& m_;
  ModelConfig cfg_;
  std::mt19937_64 rng_;
  ThreadPool& pool_;
  KvCache cache_;
  std::map<SeqId, std::vector<TokenId>> tokens_;
  std::vector<std::vector<TokenId>> remembered_;
  std::map<std::string, int64_t> stats_;
  int step_ = 0;
  int64_t checks_ = 0;
};

int env_int(const char* name, int fallback) {
  const char* s = std::getenv(name);
  return s ? std::max(1, std::atoi(s)) : fallback;
}

class KvModelRandom : public ::testing::TestWithParam<ModelConfig> {
 protected:
  void run_programs(int n_seeds, int n_ops, uint64_t base) {
    const ModelConfig& cfg = GetParam();
    const model::Model m(keel::test::reference_path(cfg.set, "model.gguf"));
    ThreadPool pool(1);
    int64_t checks = 0;
    for (int i = 0; i < n_seeds; ++i) {
      const uint64_t seed = base + static_cast<uint64_t>(i);
      SCOPED_TRACE("seed " + std::to_string(seed));
      ModelProgram prog(m, cfg, seed, pool);
      prog.run(n_ops, 20);
      if (HasFatalFailure()) return;
      checks += prog.checks();
      if (std::getenv("KEEL_KV_VERBOSE")) {
        std::string s;
        for (const auto& [k, v] : prog.stats()) s += " " + k + "=" + std::to_string(v);
        std::printf("seed %llu: checks=%lld%s\n", static_cast<unsigned long long>(seed),
                    static_cast<long long>(prog.checks()), s.c_str());
      }
    }
    EXPECT_GT(checks, n_seeds * 4) << "too few sequences compared";
  }
};

TEST_P(KvModelRandom, NextTokenLogitsEqualAFreshRun) { run_programs(3, 120, 1); }

// Disabled in the default run; CTest's "kv_soak" test (label soak) runs it.
TEST_P(KvModelRandom, DISABLED_SoakNextTokenLogitsEqualAFreshRun) {
  run_programs(env_int("KEEL_KV_SOAK_SEEDS", 10), 400, 1000);
}

// llama's and gemma2's head_dim is 16: only plain types fit them; the others (head_dim 32)
// take block types. gemma2, gemma3 and gpt-oss have sliding-window layers (window 8).
const ModelConfig kConfigs[] = {
    {"gemma2", DType::kF16, DType::kF16, true, 16},
    {"gemma3", DType::kQ8_0, DType::kQ8_0, true, 16},
    {"gemma3", DType::kF16, DType::kQ4_0, false, 32},
    {"gpt-oss", DType::kQ8_0, DType::kQ4_0, true, 16},
    {"gpt-oss", DType::kBF16, DType::kQ8_0, false, 32},
    {"llama", DType::kF16, DType::kF16, false, 16},
    {"llama", DType::kF32, DType::kBF16, true, 32},
    {"qwen3", DType::kQ8_0, DType::kQ8_0, true, 16},
    {"qwen3", DType::kQ8_0, DType::kQ4_0, true, 32},
    {"qwen3", DType::kF16, DType::kQ8_0, true, 16},
    {"qwen3", DType::kQ4_1, DType::kQ5_0, false, 16},
};

INSTANTIATE_TEST_SUITE_P(Models, KvModelRandom, ::testing::ValuesIn(kConfigs),
                         [](const auto& info) {
                           const ModelConfig& c = info.param;
                           std::string set = c.set;
                           std::replace(set.begin(), set.end(), '-', '_');
                           return set + "_" + tensor::dtype_name(c.k_type) + "_" +
                                  tensor::dtype_name(c.v_type) + (c.flash ? "_flash" : "_plain") +
                                  "_p" + std::to_string(c.page);
                         });

}  // namespace
}  // namespace keel::kv::test
