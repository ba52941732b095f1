// Shape overrides of synthetic models reach the loaded model (sizes, context, windows,
// partial rotary dims, experts), bad overrides are refused naming the option, and the
// same options give the same bytes whatever the thread count.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf.h"
#include "support/paths.h"
#include "synthetic_support.h"

namespace keel::test {
namespace {

TEST(SyntheticOptions, SizeOverridesReachTheModel) {
  model::SyntheticOptions o;
  o.arch = "llama";
  o.overrides = {.n_layer = 3, .n_embd = 128, .n_head = 2, .n_head_kv = 1, .head_dim = 96, .n_ff = 384,
                 .n_vocab = 300, .n_ctx = 64};
  const model::Model m(write_synthetic("synth_sizes", o));
  const model::HParams& hp = m.hparams();
  EXPECT_EQ(hp.n_layer, 3);
  EXPECT_EQ(hp.n_embd, 128);
  EXPECT_EQ(hp.n_head, 2);
  EXPECT_EQ(hp.n_head_kv, 1);
  EXPECT_EQ(hp.head_dim_k, 96);  // not n_embd / n_head: key_length is written
  EXPECT_EQ(hp.head_dim_v, 96);
  EXPECT_EQ(hp.n_rot, 96);
  EXPECT_EQ(hp.n_ff, 384);
  EXPECT_EQ(hp.n_ctx_train, 64);
  EXPECT_EQ(m.n_vocab(), 300);
  EXPECT_EQ(m.kv_layout().n_layers(), 3);
  EXPECT_EQ(m.kv_layout().n_kv_heads, 1);
  expect_healthy_run(m, synthetic_tokens(10));
}

TEST(SyntheticOptions, PartialRotaryDimsOnEveryLayer) {
  for (const char* arch : {"llama", "gemma3"}) {
    SCOPED_TRACE(arch);
    model::SyntheticOptions o;
    o.arch = arch;
    o.overrides.n_rot = 16;  // of head_dim 64
    const model::Model m(write_synthetic(std::string("synth_rot_") + arch, o));
    EXPECT_EQ(m.hparams().n_rot, 16);
    EXPECT_EQ(m.hparams().head_dim_k, 64);
    for (const auto& l : m.hparams().layers) EXPECT_EQ(l.rope.n_rot, 16);
    expect_healthy_run(m, synthetic_tokens(20));
  }
}

TEST(SyntheticOptions, SlidingWindowAndContext) {
  for (const char* arch : {"gemma2", "gemma3", "gpt-oss"}) {
    SCOPED_TRACE(arch);
    model::SyntheticOptions o;
    o.arch = arch;
    o.overrides.sliding_window = 4;
    o.overrides.n_ctx = 128;
    const model::Model m(write_synthetic(std::string("synth_window_") + arch, o));
    EXPECT_EQ(m.hparams().sliding_window, 4);
    EXPECT_EQ(m.hparams().n_ctx_train, 128);
    EXPECT_EQ(m.hparams().layers[0].window, 4);
    EXPECT_EQ(m.hparams().layers.back().window, 0);
    expect_healthy_run(m, synthetic_tokens(9));
  }
}

TEST(SyntheticOptions, ExpertCounts) {
  model::SyntheticOptions o;
  o.arch = "gpt-oss";
  o.overrides = {.n_ff = 128, .n_expert = 8, .n_expert_used = 3};
  const model::Model m(write_synthetic("synth_experts", o));
  EXPECT_EQ(m.hparams().n_expert, 8);
  EXPECT_EQ(m.hparams().n_expert_used, 3);
  EXPECT_EQ(m.hparams().n_ff_expert, 128);
  EXPECT_EQ(m.file().find_tensor("blk.0.ffn_down_exps.weight")->shape, (std::vector<int64_t>{128, 256, 8}));
  expect_healthy_run(m, synthetic_tokens(6));
}

struct BadCase {
  const char* what;
  const char* arch;
  const char* preset;
  const char* type;
  model::SyntheticShape overrides;
  const char* named;  // the option the message must name
};

TEST(SyntheticOptions, BadOptionsAreRefusedByName) {
  const BadCase cases[] = {
      {"odd rope dims", "llama", "tiny", "f32", {.n_rot = 7}, "--rope-dims"},
      {"rope dims above head_dim", "gemma3", "tiny", "f32", {.n_rot = 128}, "--rope-dims"},
      {"window without sliding layers", "llama", "tiny", "f32", {.sliding_window = 8}, "--sliding-window"},
      {"window beyond the context", "gemma2", "tiny", "f32", {.n_ctx = 32, .sliding_window = 64}, "--sliding-window"},
      {"mxfp4 without experts", "qwen3", "tiny", "mxfp4", {}, "--type mxfp4"},
      {"experts on a dense model", "gemma2", "tiny", "f32", {.n_expert = 4}, "--experts"},
      {"more experts used than exist", "gpt-oss", "tiny", "f32", {.n_expert = 2, .n_expert_used = 3},
       "--experts-used"},
      {"kv heads not dividing", "llama", "tiny", "f32", {.n_head_kv = 3}, "--kv-heads"},
      {"vocab below the built-in one", "llama", "tiny", "f32", {.n_vocab = 100}, "--vocab-size"},
      {"negative layers", "qwen2", "tiny", "f32", {.n_layer = -1}, "--layers"},
      {"huge width", "qwen2", "tiny", "f32", {.n_embd = int64_t{1} << 40}, "--embd"},
      {"heads wider than the model", "llama", "tiny", "f32", {.n_embd = 2, .n_head = 4, .n_head_kv = 4},
       "--heads"},
      {"preset of another arch", "gemma2", "1b", "f32", {}, "'1b'"},
      {"unknown arch", "gpt9", "tiny", "f32", {}, "'gpt9'"},
  };
  const std::string out = temp_dir() + "/synth_bad.gguf";
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    model::SyntheticOptions o;
    o.arch = c.arch;
    o.preset = c.preset;
    o.weight_type = c.type;
    o.overrides = c.overrides;
    std::remove(out.c_str());
    try {
      model::write_synthetic_model(out, o);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.named), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::ifstream(out).good());
  }
  model::SyntheticOptions padded_copy;
  padded_copy.vocab_path = shared_dir() + "/reference/vocab/ggml-vocab-llama-spm.gguf";
  padded_copy.overrides.n_vocab = 40000;
  EXPECT_THROW(model::synthetic_shape(padded_copy), Error);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(SyntheticOptions, SameOptionsSameBytesWhateverTheThreads) {
  model::SyntheticOptions o;
  o.arch = "gpt-oss";
  o.weight_type = "mxfp4";
  o.seed = 5;
  o.n_threads = 1;
  const std::string a = file_bytes(write_synthetic("synth_det_a", o));
  o.n_threads = 2;
  const std::string b = file_bytes(write_synthetic("synth_det_b", o));
  o.seed = 6;
  const std::string c = file_bytes(write_synthetic("synth_det_c", o));
  EXPECT_GT(a.size(), 100000u);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
}

}  // namespace
}  // namespace keel::test
