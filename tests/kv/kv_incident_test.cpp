// Regression tests for incident 002 (../shared/seeds/002_*): a long cached prefix, then a
// request that shares a shorter prefix and diverges, so the cache is trimmed at the
// divergence point (`rm [p0, end)`). There a query row came out fully masked and flash
// attention aborted; the full and sliding-window caches disagreed by one token.
//
//  - Real models: `make-model` tiny llama (full attention, head_dim 64) and the gpt-oss /
//    gemma3 reference sets (sliding window 8 on some layers): 2048 cached tokens, trimmed
//    at a point inside a page, then another sequence re-attached from the prefix index
//    decoding in the same batches; flash attention with q8_0 K+V and mixed K/V types;
//    next-token logits bitwise equal to a fresh run.
//  - Sliding window through the attention kernels directly (windows 8/16, pages 4..32):
//    2000 cached positions, trims and re-attaches at every kind of point; every new
//    query's output (flash and plain) bitwise equal to a fresh cache's, and no row ever
//    without a key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <random>

#include "core/error.h"
#include "kernels/attention.h"
#include "kv_model_util.h"
#include "kv_test_util.h"
#include "model/synthetic.h"
#include "support/paths.h"

namespace keel::kv::test {
namespace {

using tensor::DType;

// ---- Full attention on a real model ---------------------------------------------------

struct IncidentCase {
  const char* model;  // "make-model" (tiny llama, full attention) or a reference set
  DType k, v;
  bool several;       // go on with a second sequence re-attached from the prefix index
};

void PrintTo(const IncidentCase& c, std::ostream* os) {
  *os << c.model << " K " << tensor::dtype_name(c.k) << " V " << tensor::dtype_name(c.v);
}

class IncidentModel : public ::testing::TestWithParam<IncidentCase> {
 protected:
  static void SetUpTestSuite() {
    model::SyntheticOptions o;
    o.arch = "llama";
    o.preset = "tiny";
    o.weight_type = "q8_0";
    o.seed = 2;
    o.n_threads = 1;
    synthetic_ = keel::test::temp_dir() + "/incident-tiny.gguf";
    model::write_synthetic_model(synthetic_, o);
  }

  std::string model_path() const {
    const std::string name = GetParam().model;
    return name == "make-model" ? synthetic_ : keel::test::reference_path(name, "model.gguf");
  }

  KvOptions options() const {
    KvOptions o;
    o.k_type = GetParam().k;
    o.v_type = GetParam().v;
    o.page_tokens = 32;
    o.max_tokens = 8192;
    o.max_sequences = 6;
    o.max_batch_tokens = 512;
    return o;
  }

  static std::vector<TokenId> tokens(int64_t n, uint64_t salt, TokenId vocab) {
    std::vector<TokenId> t(n);
    for (int64_t i = 0; i < n; ++i) t[i] = static_cast<TokenId>(3 + mix(salt * 1000003 + i) % (vocab - 3));
    return t;
  }

  static std::string synthetic_;
};
std::string IncidentModel::synthetic_;

// Feeds seq the tokens of `t` it does not hold yet: one decode step first, then chunks of
// 512, as a server does after a prefix match.
void catch_up(const model::Model& m, KvCache& c, ThreadPool& pool, SeqId s,
              const std::vector<TokenId>& t) {
  bool first = true;
  while (c.length(s) < static_cast<int64_t>(t.size())) {
    const int64_t begin = c.length(s);
    const int64_t n = std::min<int64_t>(first ? 1 : 512, static_cast<int64_t>(t.size()) - begin);
    feed_batch(m, c, pool, {{s, {t.begin() + begin, t.begin() + begin + n}}}, true);
    first = false;
  }
}

TEST_P(IncidentModel, LongPrefixTrimmedAtTheDivergenceEqualsAFreshRun) {
  const model::Model m(model_path());
  bool sliding = false;
  for (int32_t w : m.kv_layout().layer_window) sliding |= w > 0;
  ThreadPool pool(1);
  const TokenId vocab = static_cast<TokenId>(m.n_vocab());
  KvCache cache(m.kv_layout(), options());
  const auto prompt = tokens(2048, 1, vocab);
  const SeqId a = cache.create();
  for (int64_t b = 0; b < 2048; b += 512) {  // chunked prefill
    feed_batch(m, cache, pool, {{a, {prompt.begin() + b, prompt.begin() + b + 512}}}, true);
  }
  cache.cache_prefix(a, prompt);
  cache.check_invariants();

  // The same slot gets a request sharing 1337 tokens (inside a page): rm [1337, end).
  // A sliding-window model no longer holds the window there: it must say so (length 0)
  // and recompute, never serve a row without keys.
  const int64_t p0 = 1337;
  std::vector<TokenId> next(prompt.begin(), prompt.begin() + p0);
  const auto diverge = tokens(24, 2, vocab);
  next.insert(next.end(), diverge.begin(), diverge.end());
  const int64_t kept = cache.truncate(a, p0);
  EXPECT_EQ(kept, sliding ? 0 : p0);
  for (int32_t l = 0; l < m.kv_layout().n_layers(); ++l) {
    ASSERT_EQ(cache.view(a, l).n_positions, kept) << "layer " << l;
  }
  cache.check_invariants();
  catch_up(m, cache, pool, a, next);
  cache.check_invariants();
  const auto got = next_logits(m, cache, pool, a, 7, true);
  const auto want = fresh_next_logits(m, options(), pool, next, 7, true);
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
      << "trimmed sequence differs from a fresh run";
  if (!GetParam().several) return;

  // Several sequences: another request re-attaches a longer cached prefix (2040 of the
  // original 2048, released from the slot but held by the prefix index, window pages
  // included) and decodes in the same batches as the trimmed one.
  std::vector<TokenId> other(prompt.begin(), prompt.begin() + 2040);
  const auto tail = tokens(9, 3, vocab);
  other.insert(other.end(), tail.begin(), tail.end());
  ASSERT_EQ(cache.lookup_prefix(other).n_tokens, 2040);
  const SeqId b = cache.attach_prefix(other, 2040);
  ASSERT_EQ(cache.length(b), 2040);
  const auto more = tokens(9, 4, vocab);
  feed_batch(m, cache, pool, {{a, more}, {b, tail}}, true);
  next.insert(next.end(), more.begin(), more.end());
  cache.check_invariants();
  for (const auto& [seq, toks] : {std::pair{a, next}, std::pair{b, other}}) {
    const auto l = next_logits(m, cache, pool, seq, 11, true);
    const auto f = fresh_next_logits(m, options(), pool, toks, 11, true);
    EXPECT_EQ(0, std::memcmp(l.data(), f.data(), l.size() * sizeof(float)))
        << "sequence " << seq << " (" << toks.size() << " tokens) differs from a fresh run";
  }
}

// Flash attention throughout; q8_0 K+V and the mixed pairs of the incident reports.
INSTANTIATE_TEST_SUITE_P(
    FlashKv, IncidentModel,
    ::testing::Values(IncidentCase{"make-model", DType::kQ8_0, DType::kQ8_0, true},
                      IncidentCase{"make-model", DType::kQ8_0, DType::kQ4_0, false},
                      IncidentCase{"make-model", DType::kF16, DType::kQ8_0, false},
                      IncidentCase{"gpt-oss", DType::kQ8_0, DType::kQ8_0, true},
                      IncidentCase{"gemma3", DType::kQ8_0, DType::kQ4_0, true},
                      IncidentCase{"gemma3", DType::kF16, DType::kQ8_0, false}),
    [](const auto& info) {
      std::string name = info.param.model;
      std::replace(name.begin(), name.end(), '-', '_');
      return name + "_" + tensor::dtype_name(info.param.k) + "_" + tensor::dtype_name(info.param.v);
    });

// ---- Sliding window, attention driven directly -----------------------------------------

struct SlidingCase {
  int32_t window, page;
  DType k, v;
};

// Attention of queries at positions [begin, end) of seq through every layer's view, both
// paths; appended to out as [layer][path][position][n_head * head_dim].
void attend(const KvCache& c, SeqId s, int64_t begin, int64_t end, std::vector<float>& out) {
  const int64_t n_head = 4;  // GQA: 2 query heads per kv head
  const int64_t n_q = end - begin;
  for (int32_t l = 0; l < c.layout().n_layers(); ++l) {
    const KvLayerView view = c.view(s, l);
    std::vector<float> q(n_q * n_head * kHeadDim);
    for (int64_t i = 0; i < n_q; ++i) {
      for (int64_t e = 0; e < n_head * kHeadDim; ++e) {
        const uint64_t r = mix(static_cast<uint64_t>((begin + i) * 1000 + e) * 8 + l);
        q[i * n_head * kHeadDim + e] = static_cast<float>(r % 1000) / 500.0f - 1;
      }
    }
    std::vector<int64_t> pos(n_q);
    std::vector<const KvLayerView*> views(n_q, &view);
    for (int64_t i = 0; i < n_q; ++i) pos[i] = begin + i;
    for (bool flash : {true, false}) {
      kernels::AttentionParams ap;
      ap.n_head = n_head;
      ap.scale = 0.17f;
      ap.flash = flash;
      std::vector<float> o(n_q * n_head * kHeadDim);
      kernels::attention(q.data(), pos.data(), views.data(), n_q, ap, o.data(), nullptr);
      out.insert(out.end(), o.begin(), o.end());
    }
  }
}

// Computes tokens[len, size) in forward passes of at most `chunk` positions: reserve,
// write K/V, attend the new queries while reserved, commit. Returns the attention
// outputs of the queries at positions >= `from`.
std::vector<float> forward(KvCache& c, SeqId s, const std::vector<TokenId>& t, int64_t chunk,
                           int64_t from) {
  uint64_t h = 5;
  std::vector<uint64_t> keys(t.size());
  for (size_t p = 0; p < t.size(); ++p) keys[p] = h = mix(h * 131 + static_cast<uint64_t>(t[p]));
  std::vector<float> out;
  while (c.length(s) < static_cast<int64_t>(t.size())) {
    const int64_t begin = c.length(s);
    const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(t.size()) - begin);
    c.reserve(s, n);
    for (int64_t p = begin; p < begin + n; ++p) {
      for (int32_t l = 0; l < c.layout().n_layers(); ++l) {
        c.write_k(s, l, p, make_row(keys[p], l, false).data());
        c.write_v(s, l, p, make_row(keys[p], l, true).data());
      }
    }
    // Each position's outputs are collected one query at a time so that chunking cannot
    // change the layout of `out`.
    for (int64_t p = std::max(begin, from); p < begin + n; ++p) attend(c, s, p, p + 1, out);
    c.commit(s, n);
  }
  return out;
}

class IncidentSliding : public ::testing::TestWithParam<SlidingCase> {};

TEST_P(IncidentSliding, TrimsAndReattachesNeverLeaveARowWithoutKeys) {
  const SlidingCase sc = GetParam();
  KvOptions o = test_options(sc.k, sc.v, sc.page, 8192, sc.page);
  o.max_sequences = 4;
  o.max_batch_tokens = 256;
  const KvLayout layout = make_layout({0, sc.window, sc.window, 0});
  const uint64_t empty_before = kernels::empty_attention_rows();
  std::mt19937_64 rng(sc.window * 100 + sc.page);
  std::vector<TokenId> prompt(2000);
  for (auto& t : prompt) t = static_cast<TokenId>(rng() % 50);

  const int64_t len = 2000;
  // Divergence points: inside the slack (served), a page boundary, inside a page far
  // back (the window is gone: recompute), 0.
  const int64_t points[] = {len - 1, len - 3, (len / sc.page - 1) * sc.page, 1337, 0};
  for (int64_t p0 : points) {
    for (bool via_attach : {false, true}) {
      SCOPED_TRACE("p0 " + std::to_string(p0) + (via_attach ? " attach" : " truncate"));
      KvCache c(layout, o);
      const SeqId a = c.create();
      forward(c, a, prompt, 256, len);
      c.cache_prefix(a, prompt);
      std::vector<TokenId> next(prompt.begin(), prompt.begin() + p0);
      for (int i = 0; i < 40; ++i) next.push_back(static_cast<TokenId>(100 + i));
      SeqId s = a;
      int64_t kept;
      if (via_attach) {
        c.release(a);
        kept = c.lookup_prefix(next).n_tokens;
        s = c.attach_prefix(next, kept);
      } else {
        kept = c.truncate(a, p0);
      }
      c.check_invariants();
      // Either the whole shared prefix is served or (window gone) nothing.
      EXPECT_TRUE(kept == p0 || kept == 0) << kept;
      if (p0 >= len - sc.page) {
        EXPECT_EQ(kept, p0) << "within the slack";
      }
      for (int32_t l = 0; l < 4; ++l) EXPECT_EQ(c.view(s, l).n_positions, kept);
      // Recompute what was not kept, then the new tokens: a decode step, then chunks.
      const auto got = forward(c, s, next, kept == p0 ? 1 : 7, p0);
      c.check_invariants();
      KvCache fresh(layout, o);
      const SeqId f = fresh.create();
      const auto want = forward(fresh, f, next, 256, p0);
      ASSERT_EQ(got.size(), want.size());
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "attention after the trim differs from a fresh cache";
    }
  }
  EXPECT_EQ(kernels::empty_attention_rows(), empty_before) << "a query row saw no key";
}

INSTANTIATE_TEST_SUITE_P(Windows, IncidentSliding,
                         ::testing::Values(SlidingCase{8, 4, DType::kQ8_0, DType::kQ8_0},
                                           SlidingCase{16, 16, DType::kQ8_0, DType::kQ4_0},
                                           SlidingCase{8, 32, DType::kF16, DType::kQ8_0},
                                           SlidingCase{16, 32, DType::kQ8_0, DType::kQ8_0}),
                         [](const auto& info) {
                           return "w" + std::to_string(info.param.window) + "_p" +
                                  std::to_string(info.param.page) + "_" +
                                  tensor::dtype_name(info.param.k) + "_" +
                                  tensor::dtype_name(info.param.v);
                         });

}  // namespace
}  // namespace keel::kv::test
