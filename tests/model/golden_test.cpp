// Golden tests: keel's logits for each reference set's tokens.txt against the independent
// implementation's (../shared/reference/README.md has the tolerances), in one batch,
// token by token and in chunks of 5, with plain and flash attention. The modes must be
// bitwise equal to each other (batch invariance); each prints its max |Δ|.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "golden_support.h"
#include "kernels/matmul_path.h"
#include "support/paths.h"

namespace keel::test {
namespace {

struct GoldenSet {
  const char* name;
  bool quantized;
  double tolerance;  // max |Δ| vs the primary reference with f32 K/V
};

class Golden : public ::testing::TestWithParam<GoldenSet> {};

void report(const std::string& set, const std::string& what, const Diff& d) {
  std::printf("[golden] %-16s %-34s max|d| %.5f  mean|d| %.5f  argmax %.3f\n", set.c_str(),
              what.c_str(), d.max_abs, d.mean_abs, d.argmax_agree);
}

TEST_P(Golden, MatchesReferenceInEveryMode) {
  const GoldenSet s = GetParam();
  model::Model m(reference_path(s.name, "model.gguf"));
  const auto tokens = read_token_ids(reference_path(s.name, "tokens.txt"));
  const int64_t n_vocab = m.n_vocab();
  // stories260K: only flash-attention reference logits exist (its plain path is buggy).
  const std::string primary = std::string(s.name) == "stories260K" ? "logits-fa.f32" : "logits.f32";
  const auto ref = read_f32(reference_path(s.name, primary));
  ASSERT_EQ(ref.size(), tokens.size() * n_vocab);

  ThreadPool pool(2), pool1(1);
  for (bool flash : {false, true}) {
    const std::string mode = flash ? "flash" : "plain";
    RunOptions o;
    o.flash = flash;
    const auto batch = run_logits(m, tokens, pool, o);
    o.chunk = 1;
    const auto seq = run_logits(m, tokens, pool, o);
    o.chunk = 5;
    const auto chunked = run_logits(m, tokens, pool1, o);
    EXPECT_TRUE(bitwise_equal(batch, seq)) << mode << ": one batch != token by token";
    EXPECT_TRUE(bitwise_equal(batch, chunked)) << mode << ": one batch != chunks of 5 (1 thread)";

    const Diff d = compare(batch, ref, n_vocab, 2 * s.tolerance);
    report(s.name, mode + " f32-kv vs " + primary, d);
    if (s.quantized) {
      EXPECT_LE(d.max_abs, 1.0) << mode;
      EXPECT_LE(d.mean_abs, 0.15) << mode;
      // Within ~0.1 of the float64 reference only without activation rounding: the
      // f32-activation matmul path (the default integer path rounds activations to 8 bits).
      const auto numpy = read_f32(reference_path(s.name, "logits-numpy.f32"));
      std::vector<float> exact;
      {
        kernels::ScopedMatmulPath reference(kernels::MatmulPath::kReference);
        RunOptions ro;
        ro.flash = flash;
        exact = run_logits(m, tokens, pool, ro);
      }
      const Diff dn = compare(exact, numpy, n_vocab, 0.2);
      report(s.name, mode + " f32-kv vs logits-numpy.f32", dn);
      EXPECT_LE(dn.max_abs, 0.1) << mode << " vs float64 numpy reference";
      EXPECT_EQ(dn.argmax_disagree_clear, 0) << mode;
    } else {
      EXPECT_LE(d.max_abs, s.tolerance) << mode;
      EXPECT_EQ(d.argmax_disagree_clear, 0) << mode << ": argmax differs away from a near tie";
    }
  }

  if (!s.quantized) {
    // With K/V rounded to f16 like the reference, the gap closes further.
    RunOptions o;
    o.kv_type = tensor::DType::kF16;
    o.flash = primary == "logits-fa.f32";
    const Diff d = compare(run_logits(m, tokens, pool, o), ref, n_vocab, 0.1);
    report(s.name, std::string(o.flash ? "flash" : "plain") + " f16-kv vs " + primary, d);
    EXPECT_LE(d.max_abs, std::string(s.name) == "stories260K" ? 0.06 : 0.03);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Model, Golden,
    ::testing::Values(GoldenSet{"stories260K", false, 0.1}, GoldenSet{"llama", false, 0.1},
                      GoldenSet{"llama3", false, 0.1}, GoldenSet{"qwen2", false, 0.1},
                      GoldenSet{"qwen3", false, 0.1}, GoldenSet{"qwen3-k-f32", false, 0.1},
                      GoldenSet{"gemma2", false, 0.15}, GoldenSet{"gemma3", false, 0.1},
                      GoldenSet{"gpt-oss", false, 0.1}, GoldenSet{"gemma3-long", false, 0.1},
                      GoldenSet{"llama-q8_0", true, 1.0}, GoldenSet{"llama-q4_0", true, 1.0},
                      GoldenSet{"qwen3-q8_0", true, 1.0}, GoldenSet{"qwen3-q4_0", true, 1.0},
                      GoldenSet{"qwen3-k-q4_k_m", true, 1.0},
                      GoldenSet{"qwen3-k-q5_k_m", true, 1.0},
                      GoldenSet{"qwen3-k-q6_k", true, 1.0}),
    [](const auto& info) {
      std::string n = info.param.name;
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

TEST(Golden, Stories260KGreedyContinuationMatchesReference) {
  model::Model m(reference_path("stories260K", "model.gguf"));
  const auto all = read_token_ids(reference_path("stories260K", "generate-tokens.txt"));
  ASSERT_EQ(all.size(), 69u);
  const std::vector<int32_t> prompt(all.begin(), all.begin() + 5);
  ThreadPool pool(2);
  kv::KvCache cache(m.kv_layout(), kv_options(tensor::DType::kF16, 32, 256));
  const kv::SeqId seq = cache.create();
  model::ForwardOptions fo;
  fo.flash_attention = true;
  std::vector<model::BatchEntry> batch;
  for (size_t i = 0; i < prompt.size(); ++i)
    batch.push_back({prompt[i], static_cast<int64_t>(i), seq, i + 1 == prompt.size()});
  auto logits = m.forward(batch, cache, pool, fo);
  std::vector<int32_t> generated;
  for (int step = 0; step < 64; ++step) {
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    generated.push_back(next);
    const model::BatchEntry e{next, cache.length(seq), seq, true};
    logits = m.forward({&e, 1}, cache, pool, fo);
  }
  const std::vector<int32_t> expected(all.begin() + 5, all.end());
  EXPECT_EQ(generated, expected);
}

}  // namespace
}  // namespace keel::test
