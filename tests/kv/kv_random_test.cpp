// Randomized programs over the KV cache. The oracle is a dense per-sequence model: each
// sequence's tokens and the rows a cache of its types must return (dequantize(quantize
// (row))). Rows of a position depend on the tokens up to it, as a forward pass's do, so
// prefix reuse must reproduce exactly what writing the same rows fresh would. After every
// operation the invariant checker runs and the touched sequences are compared bitwise;
// every few operations all of them are.
//
// Default: one seed per configuration (windows 8/16, pages 4/16/32, mixed K/V types).
// The soak (ctest -L soak) runs KEEL_KV_SOAK_SEEDS (default 10) longer seeds each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <random>
#include <string>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "kv_test_util.h"

namespace keel::kv::test {
namespace {

using tensor::DType;

struct OracleSeq {
  std::vector<TokenId> tokens;
  // [layer][pos] expected rows as read back (already through the cache's type).
  std::vector<std::vector<std::vector<float>>> k, v;
};

struct Config {
  std::vector<int32_t> windows;
  int32_t page;
  DType k_type, v_type;
  int32_t slack;
  bool tight;
};

class Program {
 public:
  Program(const Config& cfg, uint64_t seed)
      : cfg_(cfg), rng_(seed), cache_(make_layout(cfg.windows), options(cfg)) {}

  static KvOptions options(const Config& cfg) {
    // A tight pool makes reserve evict cached prefixes and sometimes run out.
    KvOptions o = test_options(cfg.k_type, cfg.v_type, cfg.page,
                               (cfg.tight ? 96 : 256) + 6 * cfg.page, cfg.slack);
    o.max_sequences = 6;
    o.max_batch_tokens = 48;
    return o;
  }

  void run(int n_ops) {
    for (int op = 0; op < n_ops; ++op) {
      step_ = op;
      touched_.clear();
      one_op();
      try {
        cache_.check_invariants();
      } catch (const Error& e) {
        FAIL() << where() << ": " << e.what();
      }
      if (op % 8 == 0) {
        for (SeqId s : cache_.live_sequences()) touched_.push_back(s);
      }
      for (SeqId s : touched_) {
        if (cache_.is_live(s)) verify(s);
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (SeqId s : cache_.live_sequences()) verify(s);
  }

  const std::map<std::string, int64_t>& stats() const { return stats_; }

  int64_t count(const std::string& what) const {
    auto it = stats_.find(what);
    return it == stats_.end() ? 0 : it->second;
  }

 private:
  int n_layers() const { return static_cast<int>(cfg_.windows.size()); }
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  TokenId random_token() { return chance(0.8) ? 0 : static_cast<TokenId>(uniform(1, 2)); }

  static uint64_t prefix_key(const std::vector<TokenId>& t, int64_t p) {
    uint64_t h = 7;
    for (int64_t i = 0; i <= p; ++i) h = mix(h * 131 + static_cast<uint64_t>(t[i]));
    return h;
  }

  std::vector<float> expected(DType t, uint64_t key, int32_t l, bool is_v) const {
    return stored(t, make_row(key, l, is_v));
  }

  // Oracle of a sequence freshly computed for tokens[0, n).
  OracleSeq fresh(const std::vector<TokenId>& tokens, int64_t n) const {
    OracleSeq o;
    o.tokens.assign(tokens.begin(), tokens.begin() + n);
    o.k.assign(n_layers(), {});
    o.v.assign(n_layers(), {});
    uint64_t h = 7;
    for (int64_t p = 0; p < n; ++p) {
      h = mix(h * 131 + static_cast<uint64_t>(tokens[p]));
      for (int32_t l = 0; l < n_layers(); ++l) {
        o.k[l].push_back(expected(cfg_.k_type, h, l, false));
        o.v[l].push_back(expected(cfg_.v_type, h, l, true));
      }
    }
    return o;
  }

  static void cut(OracleSeq& o, int64_t n) {
    o.tokens.resize(n);
    for (auto& rows : o.k) rows.resize(n);
    for (auto& rows : o.v) rows.resize(n);
  }

  SeqId pick_live() {
    const auto live = cache_.live_sequences();
    if (live.empty()) return -1;
    return live[uniform(0, static_cast<int64_t>(live.size()) - 1)];
  }

  std::string where() const { return "step " + std::to_string(step_) + " (" + last_op_ + ")"; }

  void verify(SeqId s) {
    const OracleSeq& o = oracle_.at(s);
    const int64_t len = cache_.length(s);
    ASSERT_EQ(len, static_cast<int64_t>(o.tokens.size())) << where() << " seq " << s;
    for (int32_t l = 0; l < n_layers(); ++l) {
      const KvLayerView v = cache_.view(s, l);
      ASSERT_EQ(v.n_positions, len);
      // Every query of the sequence sees at least its own key: position len-1 needs keys
      // from len - window on.
      if (len > 0 && v.window > 0) {
        ASSERT_LE(v.first_held, std::max<int64_t>(0, len - v.window))
            << where() << " seq " << s << " layer " << l;
      } else {
        ASSERT_EQ(v.first_held, 0) << where() << " seq " << s << " layer " << l;
      }
      for (int64_t p = v.first_held; p < len; ++p) {
        ASSERT_TRUE(same_bits(view_row(v, p, false), o.k[l][p]))
            << where() << " seq " << s << " layer " << l << " pos " << p << " K";
        ASSERT_TRUE(same_bits(view_row(v, p, true), o.v[l][p]))
            << where() << " seq " << s << " layer " << l << " pos " << p << " V";
      }
    }
  }

  void one_op() {
    // Keep slots turning over so attach and fork find free ones.
    if (static_cast<int32_t>(cache_.live_sequences().size()) == cache_.options().max_sequences &&
        chance(0.5)) {
      return release();
    }
    const int64_t r = uniform(0, 99);
    if (r < 30) return append();
    if (r < 36) return create();
    if (r < 46) return fork();
    if (r < 58) return truncate();
    if (r < 64) return shift();
    if (r < 70) return release();
    if (r < 80) return cache_prefix();
    if (r < 92) return attach();
    return evict();
  }

  void create() {
    last_op_ = "create";
    try {
      const SeqId s = cache_.create();
      oracle_[s] = fresh({}, 0);
      touched_.push_back(s);
      ++stats_["create"];
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kBusy) << e.what();
    }
  }

  // Appends to 1-3 sequences in one "batch": reserve all, write interleaved, then commit,
  // partly commit or roll back each.
  void append() {
    last_op_ = "append";
    std::vector<SeqId> batch;
    for (int i = uniform(1, 3); i > 0; --i) {
      const SeqId s = pick_live();
      if (s < 0) return create();
      if (std::find(batch.begin(), batch.end(), s) == batch.end()) batch.push_back(s);
    }
    std::vector<std::vector<TokenId>> toks(batch.size());
    std::vector<SeqId> reserved;
    for (size_t b = 0; b < batch.size(); ++b) {
      const SeqId s = batch[b];
      const int64_t n = uniform(1, oracle_[s].tokens.size() > 120 ? 4 : 20);
      toks[b] = oracle_[s].tokens;
      for (int64_t i = 0; i < n; ++i) toks[b].push_back(random_token());
      try {
        cache_.reserve(s, n);
        reserved.push_back(s);
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), ErrorCode::kOutOfMemory) << where() << ": " << e.what();
        ASSERT_EQ(cache_.reserved(s), 0);
        ++stats_["append_oom"];
        toks[b].clear();
      }
      touched_.push_back(s);
    }
    for (int32_t l = 0; l < n_layers(); ++l) {
      for (size_t b = 0; b < batch.size(); ++b) {
        if (toks[b].empty()) continue;
        const SeqId s = batch[b];
        for (int64_t p = cache_.length(s); p < static_cast<int64_t>(toks[b].size()); ++p) {
          const uint64_t key = prefix_key(toks[b], p);
          cache_.write_k(s, l, p, make_row(key, l, false).data());
          cache_.write_v(s, l, p, make_row(key, l, true).data());
        }
      }
    }
    for (size_t b = 0; b < batch.size(); ++b) {
      if (toks[b].empty()) continue;
      const SeqId s = batch[b];
      const int64_t res = cache_.reserved(s);
      const int64_t r = uniform(0, 9);
      const int64_t n = r == 0 ? 0 : r == 1 ? uniform(0, res) : res;
      if (n == 0) {
        cache_.rollback(s);
      } else {
        cache_.commit(s, n);
      }
      const int64_t new_len = static_cast<int64_t>(oracle_[s].tokens.size()) + n;
      OracleSeq& o = oracle_[s];
      for (int64_t p = static_cast<int64_t>(o.tokens.size()); p < new_len; ++p) {
        o.tokens.push_back(toks[b][p]);
        const uint64_t key = prefix_key(o.tokens, p);
        for (int32_t l = 0; l < n_layers(); ++l) {
          o.k[l].push_back(expected(cfg_.k_type, key, l, false));
          o.v[l].push_back(expected(cfg_.v_type, key, l, true));
        }
      }
      ++stats_["append"];
    }
  }

  void fork() {
    last_op_ = "fork";
    const SeqId src = pick_live();
    if (src < 0) return;
    const int64_t len = cache_.length(src);
    const int64_t n = chance(0.5) ? uniform(std::max<int64_t>(0, len - cfg_.slack), len)
                                  : uniform(0, len);
    SeqId d;
    try {
      d = cache_.fork(src, n);
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kBusy) << e.what();
      return;
    }
    const int64_t got = cache_.length(d);
    ASSERT_TRUE(got == n || got == 0) << where() << ": fork at " << n << " gave " << got;
    if (n >= len - cfg_.slack + cfg_.page || !sliding()) {
      ASSERT_EQ(got, n) << where();
    }
    OracleSeq o = oracle_[src];
    cut(o, got);
    oracle_[d] = std::move(o);
    touched_.push_back(d);
    touched_.push_back(src);
    ++stats_[got == n ? "fork" : "fork_recompute"];
  }

  bool sliding() const {
    return std::any_of(cfg_.windows.begin(), cfg_.windows.end(), [](int32_t w) { return w > 0; });
  }

  void truncate() {
    last_op_ = "truncate";
    const SeqId s = pick_live();
    if (s < 0) return;
    const int64_t len = cache_.length(s);
    const int64_t n = chance(0.6) ? uniform(std::max<int64_t>(0, len - cfg_.slack), len)
                                  : uniform(0, len);
    const int64_t got = cache_.truncate(s, n);
    ASSERT_TRUE(got == n || got == 0) << where() << ": truncate to " << n << " gave " << got;
    if (!sliding()) {
      ASSERT_EQ(got, n) << where();
    }
    cut(oracle_[s], got);
    touched_.push_back(s);
    ++stats_[got == n ? "truncate" : "truncate_recompute"];
  }

  void shift() {
    last_op_ = "shift";
    const SeqId s = pick_live();
    if (s < 0) return;
    const int64_t len = cache_.length(s);
    if (len < 2) return;
    const int64_t keep = uniform(0, std::min<int64_t>(len - 1, 6));
    const int64_t discard = uniform(1, len - keep);
    OracleSeq& o = oracle_[s];
    touched_.push_back(s);
    int64_t got;
    try {
      got = cache_.shift(s, keep, discard, test_rotate);
    } catch (const Error& e) {
      // Rows shared with other sequences need new pages; a full pool refuses, unchanged.
      ASSERT_EQ(e.code(), ErrorCode::kOutOfMemory) << where() << ": " << e.what();
      ++stats_["shift_oom"];
      return;
    }
    if (got != len - discard) {
      // The renumbered window was not held: the kept prefix (or nothing) remains.
      ASSERT_TRUE(sliding()) << where();
      ASSERT_TRUE(got == keep || got == 0) << where() << ": shift gave " << got;
      cut(o, got);
      ++stats_["shift_recompute"];
      return;
    }
    o.tokens.erase(o.tokens.begin() + keep, o.tokens.begin() + keep + discard);
    for (int32_t l = 0; l < n_layers(); ++l) {
      o.k[l].erase(o.k[l].begin() + keep, o.k[l].begin() + keep + discard);
      o.v[l].erase(o.v[l].begin() + keep, o.v[l].begin() + keep + discard);
      for (int64_t q = keep; q < got; ++q) {
        std::vector<float> row = o.k[l][q];
        test_rotate(l, row.data(), 1, -discard);
        o.k[l][q] = stored(cfg_.k_type, row);
      }
    }
    ++stats_["shift"];
  }

  void release() {
    last_op_ = "release";
    const SeqId s = pick_live();
    if (s < 0) return;
    cache_.release(s);
    oracle_.erase(s);
    ++stats_["release"];
  }

  void cache_prefix() {
    last_op_ = "cache_prefix";
    const SeqId s = pick_live();
    if (s < 0) return;
    const auto& t = oracle_[s].tokens;
    const int64_t n = chance(0.7) ? static_cast<int64_t>(t.size()) : uniform(0, t.size());
    const std::vector<TokenId> prefix(t.begin(), t.begin() + n);
    cache_.cache_prefix(s, prefix);
    remembered_.push_back(prefix);
    if (remembered_.size() > 16) remembered_.erase(remembered_.begin());
    ++stats_["cache_prefix"];
  }

  void attach() {
    last_op_ = "attach";
    std::vector<TokenId> t;
    if (!remembered_.empty() && chance(0.7)) {
      t = remembered_[uniform(0, static_cast<int64_t>(remembered_.size()) - 1)];
      t.resize(uniform(0, t.size()));
    }
    for (int64_t i = uniform(0, 8); i > 0; --i) t.push_back(random_token());
    const PrefixMatch m = cache_.lookup_prefix(t);
    ASSERT_LE(m.n_tokens, m.n_full_tokens);
    ASSERT_LE(m.n_full_tokens, static_cast<int64_t>(t.size()));
    int64_t n = m.n_tokens;
    if (chance(0.3)) {  // a shorter prefix: usable only if its own window is held
      const std::vector<TokenId> head(t.begin(), t.begin() + uniform(0, t.size()));
      n = cache_.lookup_prefix(head).n_tokens;
      // attach_prefix takes the longest usable prefix of what it is asked for.
      if (chance(0.5)) n = static_cast<int64_t>(head.size());
    }
    SeqId s;
    try {
      s = cache_.attach_prefix(t, n);
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kBusy) << e.what();
      return;
    }
    const int64_t got = cache_.length(s);
    ASSERT_LE(got, n);
    ASSERT_EQ(got, cache_.lookup_prefix(std::vector<TokenId>(t.begin(), t.begin() + n)).n_tokens);
    if (!sliding()) {
      ASSERT_EQ(got, std::min(n, m.n_tokens)) << where();
    }
    n = got;
    oracle_[s] = fresh(t, n);
    touched_.push_back(s);
    ++stats_[n > 0 ? "attach" : "attach_empty"];
  }

  void evict() {
    last_op_ = "evict";
    cache_.evict_prefixes(uniform(1, 4));
    ++stats_["evict"];
  }

  Config cfg_;
  std::mt19937_64 rng_;
  KvCache cache_;
  std::map<SeqId, OracleSeq> oracle_;
  std::vector<std::vector<TokenId>> remembered_;
  std::vector<SeqId> touched_;
  std::map<std::string, int64_t> stats_;
  int step_ = 0;
  std::string last_op_;
};

int soak_seeds() {
  const char* s = std::getenv("KEEL_KV_SOAK_SEEDS");
  return s ? std::max(1, std::atoi(s)) : 10;
}

std::vector<Config> configs() {
  const std::pair<DType, DType> types[] = {
      {DType::kF16, DType::kF16},  {DType::kQ8_0, DType::kQ8_0}, {DType::kQ8_0, DType::kQ4_0},
      {DType::kF16, DType::kQ8_0}, {DType::kQ4_1, DType::kQ5_0}, {DType::kBF16, DType::kQ5_1},
      {DType::kF32, DType::kF32},  {DType::kQ5_1, DType::kF16},  {DType::kQ4_0, DType::kBF16}};
  const std::vector<std::vector<int32_t>> layouts = {{0, 0, 0}, {0, 8, 8, 0}, {16, 0, 16}};
  std::vector<Config> out;
  int t = 0;
  for (int32_t page : {4, 16, 32}) {
    for (const auto& w : layouts) {
      const auto [k, v] = types[t++ % 9];
      // Slack of a page keeps shifts servable; a small slack exercises the fallbacks.
      out.push_back({w, page, k, v, t % 3 == 0 ? 3 : page, t % 2 == 0});
    }
  }
  return out;
}

void PrintTo(const Config& c, std::ostream* os) {
  *os << "page " << c.page << ", " << c.windows.size() << " layers, K " << tensor::dtype_name(c.k_type)
      << ", V " << tensor::dtype_name(c.v_type) << ", slack " << c.slack
      << (c.tight ? ", tight pool" : "");
}

class KvRandom : public ::testing::TestWithParam<Config> {};

void run_seeds(const Config& cfg, int n_seeds, int n_ops, uint64_t base) {
  for (int i = 0; i < n_seeds; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (reproduce: this test with the seed)");
    Program prog(cfg, seed);
    prog.run(n_ops);
    if (::testing::Test::HasFatalFailure()) return;
    std::string summary;
    for (const auto& [what, n] : prog.stats()) summary += " " + what + "=" + std::to_string(n);
    ::testing::Test::RecordProperty("ops_seed_" + std::to_string(seed), summary);
    if (std::getenv("KEEL_KV_VERBOSE")) {
      std::printf("seed %llu:%s\n", static_cast<unsigned long long>(seed), summary.c_str());
    }
    // The program must actually have exercised the operations it claims to test.
    EXPECT_GT(prog.count("append"), n_ops / 10);
    EXPECT_GT(prog.count("fork") + prog.count("truncate") + prog.count("shift"), n_ops / 10);
    EXPECT_GE(prog.count("attach"), n_ops / 200);
  }
}

TEST_P(KvRandom, ProgramsMatchTheDenseOracle) {
  run_seeds(GetParam(), 1, 1500, 1);
}

// Disabled in the default run; CTest's "kv_soak" test (label soak) runs it.
TEST_P(KvRandom, DISABLED_SoakProgramsMatchTheDenseOracle) {
  run_seeds(GetParam(), soak_seeds(), 4000, 1000);
}

std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  std::string name = "p" + std::to_string(info.param.page) + "_w";
  for (int32_t w : info.param.windows) name += std::to_string(w) + "_";
  return name + tensor::dtype_name(info.param.k_type) + "_" + tensor::dtype_name(info.param.v_type) +
         "_s" + std::to_string(info.param.slack) + (info.param.tight ? "_tight" : "");
}

INSTANTIATE_TEST_SUITE_P(Configs, KvRandom, ::testing::ValuesIn(configs()), config_name);

}  // namespace
}  // namespace keel::kv::test
