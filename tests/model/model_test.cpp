// Loading (metadata, shape checks, errors) and forward-pass contracts (several sequences
// in one batch, validation, rollback on failure, KV layout, K re-rotation).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf.h"
#include "golden_support.h"
#include "kernels/rope.h"
#include "support/paths.h"

namespace keel::test {
namespace {

// Copies a GGUF file, letting `edit` drop (return false) or reshape tensors (data resized
// to the new shape), and `meta` change metadata.
std::string write_variant(
    const std::string& src, const std::string& name,
    const std::function<bool(const std::string&, std::vector<int64_t>&)>& edit,
    const std::function<void(gguf::GgufWriter&)>& meta = {}) {
  return copy_gguf(
      src, name,
      [&](TensorCopy& t) {
        if (!edit(t.name, t.shape)) return false;
        int64_t n = 1;
        for (auto d : t.shape) n *= d;
        t.data.resize(tensor::row_bytes(t.type, t.shape[0]) * (n / t.shape[0]));
        return true;
      },
      meta);
}

TEST(ModelLoad, HyperParametersAndDefaults) {
  model::Model qwen3(reference_path("qwen3", "model.gguf"));
  const auto& hp = qwen3.hparams();
  EXPECT_EQ(hp.arch, "qwen3");
  EXPECT_EQ(hp.n_layer, 3);
  EXPECT_EQ(hp.head_dim_k, 32);  // from key_length, not n_embd / n_head = 16
  EXPECT_EQ(hp.n_rot, 32);       // defaults to head_dim
  EXPECT_EQ(hp.n_vocab, 512);
  EXPECT_EQ(hp.layers[0].rope.mode, kernels::RopeMode::kNeox);
  auto layout = qwen3.kv_layout();
  EXPECT_EQ(layout.n_layers(), 3);
  EXPECT_EQ(layout.n_kv_heads, 2);
  EXPECT_EQ(layout.head_dim_k, 32);

  model::Model stories(reference_path("stories260K", "model.gguf"));
  EXPECT_EQ(stories.hparams().rope_base, 10000.0f);  // no freq_base key: default
  EXPECT_EQ(stories.hparams().head_dim_k, 8);
  EXPECT_EQ(stories.hparams().layers[0].rope.mode, kernels::RopeMode::kNormal);

  model::Model llama3(reference_path("llama3", "model.gguf"));
  EXPECT_NE(llama3.hparams().layers[1].rope.freq_factors, nullptr);  // rope_freqs bound
}

TEST(ModelLoad, MissingTensorIsNamedWithExpectedShape) {
  const auto path = write_variant(reference_path("llama", "model.gguf"), "missing",
                                  [](const std::string& n, auto&) { return n != "blk.1.attn_k.weight"; });
  try {
    model::Model m(path);
    FAIL() << "loaded a model without blk.1.attn_k.weight";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("'blk.1.attn_k.weight'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[64, 32]"), std::string::npos) << e.what();
  }
}

TEST(ModelLoad, MisshapenTensorIsNamedWithBothShapes) {
  const auto path = write_variant(reference_path("llama", "model.gguf"), "misshapen",
                                  [](const std::string& n, std::vector<int64_t>& shape) {
                                    if (n == "blk.0.ffn_up.weight") shape = {64, 64};
                                    return true;
                                  });
  try {
    model::Model m(path);
    FAIL() << "loaded a misshapen model";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'blk.0.ffn_up.weight' has shape [64, 64], expected [64, 128]"),
              std::string::npos)
        << msg;
  }
}

TEST(ModelLoad, UnknownArchitectureAndBadMetadataThrow) {
  auto same = [](const std::string&, auto&) { return true; };
  const auto unknown = write_variant(reference_path("llama", "model.gguf"), "unknown", same,
                                     [](gguf::GgufWriter& w) {
                                       w.set("general.architecture", gguf::Value::str("nosuch"));
                                     });
  EXPECT_THROW({ model::Model m(unknown); }, Error);
  const auto heads = write_variant(reference_path("llama", "model.gguf"), "heads", same,
                                   [](gguf::GgufWriter& w) {
                                     w.set("llama.attention.head_count_kv", gguf::Value::u32(3));
                                   });
  try {
    model::Model m(heads);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_count_kv"), std::string::npos) << e.what();
  }
}

TEST(ModelLoad, TiedOutputWhenOutputWeightAbsent) {
  // qwen2's reference model is tied; dropping output.weight from qwen3 ties it too.
  const auto path = write_variant(reference_path("qwen3", "model.gguf"), "tied",
                                  [](const std::string& n, auto&) { return n != "output.weight"; });
  model::Model m(path);
  ThreadPool pool(1);
  RunOptions o;
  auto logits = run_logits(m, {1, 403, 407}, pool, o);
  ASSERT_EQ(logits.size(), 3u * 512);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

struct MultiSeqCase {
  const char* set;
  bool flash;
};
class MultiSeq : public ::testing::TestWithParam<MultiSeqCase> {};

TEST_P(MultiSeq, SeveralSequencesInOneBatchEqualSeparateRuns) {
  const auto [set, flash] = GetParam();
  model::Model m(reference_path(set, "model.gguf"));
  const auto tokens = read_token_ids(reference_path(set, "tokens.txt"));
  ThreadPool pool(2);
  RunOptions o;
  o.flash = flash;
  const auto alone = run_logits(m, tokens, pool, o);
  model::ForwardOptions fo;
  fo.flash_attention = flash;
  const int64_t V = m.n_vocab();

  kv::KvCache cache(m.kv_layout(), kv_options(tensor::DType::kF32, 16, 1024));
  const kv::SeqId a = cache.create(), b = cache.create();
  // First a alone for 7 tokens, then a batch interleaving a's rest with all of b.
  std::vector<model::BatchEntry> first;
  for (int i = 0; i < 7; ++i) first.push_back({tokens[i], i, a, true});
  auto la = m.forward(first, cache, pool, fo);
  std::vector<model::BatchEntry> mixed;
  size_t ia = 7, ib = 0;
  while (ia < tokens.size() || ib < 20) {
    if (ib < 20) mixed.push_back({tokens[ib], int64_t(ib), b, ib % 3 == 0}), ++ib;
    if (ia < tokens.size()) mixed.push_back({tokens[ia], int64_t(ia), a, true}), ++ia;
  }
  const auto lm = m.forward(mixed, cache, pool, fo);
  size_t row = 0;
  for (const auto& e : mixed) {
    if (!e.want_logits) continue;
    const float* got = lm.data() + row++ * V;
    EXPECT_EQ(std::memcmp(got, alone.data() + e.pos * V, V * 4), 0)
        << "seq " << e.seq << " pos " << e.pos << " differs from a lone run";
  }
  EXPECT_EQ(row * V, lm.size());
  EXPECT_EQ(std::memcmp(la.data(), alone.data(), 7 * V * 4), 0);
  EXPECT_EQ(cache.length(a), int64_t(tokens.size()));
  EXPECT_EQ(cache.length(b), 20);
  cache.check_invariants();
}

// Full attention, sliding windows (gemma3: 5 of 6 layers), sinks + MoE (gpt-oss).
INSTANTIATE_TEST_SUITE_P(Forward, MultiSeq,
                         ::testing::Values(MultiSeqCase{"qwen2", false}, MultiSeqCase{"gemma3", false},
                                           MultiSeqCase{"gemma3", true}, MultiSeqCase{"gpt-oss", true}),
                         [](const auto& info) {
                           std::string n = std::string(info.param.set) + (info.param.flash ? "_flash" : "_plain");
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Forward, BadBatchesThrowAndLeaveTheCacheUnchanged) {
  model::Model m(reference_path("llama", "model.gguf"));
  ThreadPool pool(1);
  kv::KvCache cache(m.kv_layout(), kv_options(tensor::DType::kF16, 16, 64));
  const kv::SeqId a = cache.create();
  const model::BatchEntry ok{1, 0, a, true};
  m.forward({&ok, 1}, cache, pool);
  ASSERT_EQ(cache.length(a), 1);

  const model::BatchEntry gap{5, 3, a, true};  // position 1 expected
  EXPECT_THROW(m.forward({&gap, 1}, cache, pool), Error);
  const model::BatchEntry bad_token{512, 1, a, true};
  EXPECT_THROW(m.forward({&bad_token, 1}, cache, pool), Error);
  const model::BatchEntry bad_seq{1, 0, 99, true};
  EXPECT_THROW(m.forward({&bad_seq, 1}, cache, pool), Error);
  EXPECT_EQ(cache.length(a), 1);

  // A reservation that fails part-way (the pool holds 64 tokens) rolls back the others.
  const kv::SeqId b = cache.create();
  std::vector<model::BatchEntry> big;
  big.push_back({7, 1, a, true});
  for (int i = 0; i < 200; ++i) big.push_back({7, i, b, false});
  EXPECT_THROW(m.forward(big, cache, pool), Error);
  EXPECT_EQ(cache.length(a), 1);
  EXPECT_EQ(cache.length(b), 0);
  cache.check_invariants();
  // The cache still works, and gives what a fresh run gives.
  const model::BatchEntry next{403, 1, a, true};
  auto l = m.forward({&next, 1}, cache, pool);
  RunOptions o;
  o.kv_type = tensor::DType::kF16;
  auto fresh = run_logits(m, {1, 403}, pool, o);
  EXPECT_EQ(std::memcmp(l.data(), fresh.data() + m.n_vocab(), m.n_vocab() * 4), 0);
}

TEST(Forward, KRotatorMatchesRopeAtShiftedPosition) {
  model::Model m(reference_path("qwen3", "model.gguf"));
  const auto& hp = m.hparams();
  auto rot = m.k_rotator();
  const int64_t width = hp.n_head_kv * hp.head_dim_k;
  std::vector<float> a(width), b(width);
  for (int64_t i = 0; i < width; ++i) a[i] = b[i] = std::sin(0.3 * i);
  const int64_t p0 = 30, p1 = 12;
  kernels::rope(a.data(), &p0, 1, hp.n_head_kv, hp.head_dim_k, hp.layers[1].rope);
  rot(1, a.data(), 1, p1 - p0);
  kernels::rope(b.data(), &p1, 1, hp.n_head_kv, hp.head_dim_k, hp.layers[1].rope);
  for (int64_t i = 0; i < width; ++i) EXPECT_NEAR(a[i], b[i], 1e-4);
  EXPECT_THROW(rot(3, a.data(), 1, 1), Error);
}

}  // namespace
}  // namespace keel::test
