// Every architecture `keel make-model` writes loads with model::Model, has the features
// that define it (tensors, windows, rope per layer), and runs: one batch equals token by
// token bitwise, logits finite and peaked. gpt-oss experts in every supported type.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "synthetic_support.h"
#include "tensor/types.h"

namespace keel::test {
namespace {

using tensor::DType;

struct ArchCase {
  const char* arch;
  std::vector<int32_t> windows;           // per layer, tiny preset
  int64_t head_dim;
  std::vector<const char*> must_have;     // tensors that make the architecture what it is
  std::vector<const char*> must_not_have;
};

const std::vector<ArchCase>& arch_cases() {
  static const std::vector<ArchCase> cases = {
      {"llama", {0, 0}, 64, {"output.weight", "blk.1.ffn_gate.weight"}, {"blk.0.attn_q.bias"}},
      {"qwen2", {0, 0}, 64, {"blk.0.attn_q.bias", "blk.1.attn_k.bias", "blk.1.attn_v.bias"},
       {"output.weight", "blk.0.attn_q_norm.weight"}},
      {"qwen3", {0, 0}, 128, {"blk.0.attn_q_norm.weight", "blk.1.attn_k_norm.weight", "output.weight"},
       {"blk.0.attn_q.bias"}},
      {"gemma2", {16, 0}, 64, {"blk.0.post_attention_norm.weight", "blk.1.post_ffw_norm.weight"},
       {"output.weight", "blk.0.attn_q_norm.weight"}},
      {"gemma3", {16, 16, 16, 16, 16, 0}, 64,
       {"blk.0.attn_q_norm.weight", "blk.5.attn_k_norm.weight", "blk.3.post_ffw_norm.weight"},
       {"output.weight"}},
      {"gpt-oss", {16, 0}, 64,
       {"blk.0.attn_sinks.weight", "blk.1.attn_output.bias", "blk.0.ffn_gate_inp.bias",
        "blk.1.ffn_down_exps.bias", "output.weight"},
       {"blk.0.ffn_gate.weight", "blk.0.ffn_norm.weight"}},
  };
  return cases;
}

class SyntheticArch : public ::testing::TestWithParam<ArchCase> {};

TEST_P(SyntheticArch, LoadsWithItsFeaturesAndRunsBatchInvariant) {
  const ArchCase& c = GetParam();
  model::SyntheticOptions o;
  o.arch = c.arch;
  o.seed = 7;
  const std::string path = write_synthetic(std::string("synth_") + c.arch, o);
  const model::Model m(path);
  const model::HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, c.arch);
  EXPECT_EQ(hp.head_dim_k, c.head_dim);
  EXPECT_EQ(hp.n_rot, c.head_dim);
  std::vector<int32_t> windows;
  for (const auto& l : hp.layers) windows.push_back(l.window);
  EXPECT_EQ(windows, c.windows);
  EXPECT_EQ(m.kv_layout().layer_window, c.windows);
  for (const char* name : c.must_have) EXPECT_NE(m.file().find_tensor(name), nullptr) << name;
  for (const char* name : c.must_not_have) EXPECT_EQ(m.file().find_tensor(name), nullptr) << name;
  // Longer than the tiny presets' window of 16, so sliding layers really drop keys.
  expect_healthy_run(m, synthetic_tokens(24));
}

// A batch long enough that the element-wise steps between the products (norms, RoPE, the
// gated activation, the residual add) split by rows across the pool (model/blocks.cpp splits
// from 64 Ki elements; the tiny presets' rows are 256 wide): still equal to token by token,
// bitwise, which runs every step on one thread.
TEST_P(SyntheticArch, BatchSplitAcrossThePoolEqualsTokenByToken) {
  const ArchCase& c = GetParam();
  model::SyntheticOptions o;
  o.arch = c.arch;
  o.seed = 11;
  const model::Model m(write_synthetic(std::string("synth_long_") + c.arch, o));
  ASSERT_GE(300 * m.hparams().n_embd, int64_t{1} << 16);
  expect_healthy_run(m, synthetic_tokens(300));
}

INSTANTIATE_TEST_SUITE_P(Model, SyntheticArch, ::testing::ValuesIn(arch_cases()), [](const auto& info) {
  std::string name = info.param.arch;
  for (char& ch : name) ch = ch == '-' ? '_' : ch;
  return name;
});

TEST(SyntheticArchPlan, GemmaSoftCapsAndGemma3RopePerLayer) {
  model::SyntheticOptions o;
  o.arch = "gemma2";
  const model::Model g2(write_synthetic("synth_plan_gemma2", o));
  EXPECT_EQ(g2.hparams().layers[0].attn_softcap, 50.0f);
  EXPECT_EQ(g2.hparams().final_softcap, 30.0f);

  o.arch = "gemma3";
  o.overrides.n_layer = 12;  // two 5:1 periods
  const model::Model g3(write_synthetic("synth_plan_gemma3", o));
  ASSERT_EQ(g3.hparams().layers.size(), 12u);
  for (size_t il = 0; il < 12; ++il) {
    const auto& l = g3.hparams().layers[il];
    const bool global = (il + 1) % 6 == 0;
    EXPECT_EQ(l.window, global ? 0 : 16) << il;
    EXPECT_EQ(l.attn_softcap, 0.0f);
    EXPECT_EQ(l.rope.base, global ? 1e6f : 10000.0f) << il;
    EXPECT_EQ(l.rope.freq_scale, global ? 0.125f : 1.0f) << il;
  }
  // The pattern is written per layer (as newer converters do), not left to the default.
  const gguf::Value* pattern = g3.file().find("gemma3.attention.sliding_window_pattern");
  ASSERT_NE(pattern, nullptr);
  EXPECT_EQ(pattern->array_size(), 12u);
}

TEST(SyntheticArchPlan, GptOssYarnAndExperts) {
  model::SyntheticOptions o;
  o.arch = "gpt-oss";
  const model::Model m(write_synthetic("synth_plan_oss", o));
  const model::HParams& hp = m.hparams();
  EXPECT_EQ(hp.n_expert, 4);
  EXPECT_EQ(hp.n_expert_used, 2);
  EXPECT_EQ(hp.n_ff_expert, 256);
  EXPECT_EQ(hp.rope_scaling, "yarn");
  for (const auto& l : hp.layers) {
    EXPECT_EQ(l.rope.ext_factor, 1.0f);
    EXPECT_EQ(l.rope.n_ctx_orig, 4096);
    EXPECT_EQ(l.rope.freq_scale, 1.0f / 32.0f);
  }
  const gguf::TensorInfo* gate = m.file().find_tensor("blk.1.ffn_gate_exps.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->shape, (std::vector<int64_t>{256, 256, 4}));
  EXPECT_EQ(m.file().find_tensor("blk.1.ffn_up_exps.bias")->shape, (std::vector<int64_t>{256, 4}));
}

// Pearson correlation of two logit sets.
double correlation(const std::vector<float>& a, const std::vector<float>& b) {
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= static_cast<double>(a.size());
  mb /= static_cast<double>(b.size());
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb);
}

struct ExpertCase {
  const char* type;
  DType experts;
  DType attention;  // other matrices of the mix
  double min_correlation;  // with the f32 model of the same seed
};

class SyntheticGptOssTypes : public ::testing::TestWithParam<ExpertCase> {};

TEST_P(SyntheticGptOssTypes, ExpertsStoredInTheTypeAndComputeCloseToF32) {
  const ExpertCase& c = GetParam();
  model::SyntheticOptions o;
  o.arch = "gpt-oss";
  o.seed = 11;
  const std::vector<int32_t> tokens = synthetic_tokens(12);
  const model::Model f32(write_synthetic("synth_oss_ref_f32", o));
  const std::vector<float> ref = expect_healthy_run(f32, tokens);

  o.weight_type = c.type;
  const model::Model m(write_synthetic(std::string("synth_oss_") + c.type, o));
  for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight"}) {
    EXPECT_EQ(m.file().find_tensor(name)->type, c.experts) << name;
  }
  EXPECT_EQ(m.file().find_tensor("blk.0.attn_q.weight")->type, c.attention);
  for (const char* name : {"blk.0.ffn_gate_inp.weight", "blk.0.ffn_gate_exps.bias", "blk.0.attn_sinks.weight",
                           "blk.0.attn_q.bias"}) {
    EXPECT_EQ(m.file().find_tensor(name)->type, DType::kF32) << name;
  }
  const std::vector<float> got = expect_healthy_run(m, tokens);
  const double r = correlation(got, ref);
  std::printf("[synthetic] gpt-oss %-6s vs f32: correlation %.4f\n", c.type, r);
  EXPECT_GT(r, c.min_correlation);
  if (std::string(c.type) != "f32") {
    EXPECT_LT(r, 1.0);  // rounding did happen
  }
}

INSTANTIATE_TEST_SUITE_P(Model, SyntheticGptOssTypes,
                         ::testing::Values(ExpertCase{"f32", DType::kF32, DType::kF32, 0.999999},
                                           ExpertCase{"f16", DType::kF16, DType::kF16, 0.999},
                                           ExpertCase{"q8_0", DType::kQ8_0, DType::kQ8_0, 0.99},
                                           ExpertCase{"q4_0", DType::kQ4_0, DType::kQ4_0, 0.9},
                                           ExpertCase{"mxfp4", DType::kMXFP4, DType::kQ8_0, 0.9}),
                         [](const auto& info) { return std::string(info.param.type); });

}  // namespace
}  // namespace keel::test
