// `keel make-model` through the built binary (KEEL_BIN): the tiny preset in every weight
// type opens with GgufFile with the expected metadata, tensors, shapes and types; the
// weights have the intended scales; the same seed gives the same bytes; keel's loader
// (`keel eval`) runs the result; other architectures and shape overrides land in the
// metadata; bad options exit 2.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf.h"
#include "support/paths.h"
#include "tensor/types.h"

namespace keel::test {
namespace {

using tensor::DType;

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome keel(const std::string& args) {
  const std::string log = temp_dir() + "/make_model_output.txt";
  const int status = std::system((std::string(KEEL_BIN) + " " + args + " > " + log + " 2>&1").c_str());
  std::ifstream in(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(std::istreambuf_iterator<char>(in), {})};
}

std::string make(const std::string& name, const std::string& args) {
  const std::string path = temp_dir() + "/" + name + ".gguf";
  const Outcome r = keel("make-model -o " + path + " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return path;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Mean and standard deviation of a whole tensor, dequantized.
std::pair<double, double> moments(const gguf::TensorInfo& t) {
  const int64_t n = t.shape[0];
  const int64_t rows = t.n_elements() / n;
  std::vector<float> row(static_cast<size_t>(n));
  double sum = 0, sum2 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    tensor::dequantize_row(t.type, t.data + r * tensor::row_bytes(t.type, n), row.data(), n);
    for (float v : row) {
      sum += v;
      sum2 += static_cast<double>(v) * v;
    }
  }
  const double count = static_cast<double>(rows * n);
  return {sum / count, std::sqrt(sum2 / count - (sum / count) * (sum / count))};
}

// Tiny preset: n_embd 256, n_ff 512, 2 layers, 4 heads (2 KV, head_dim 64), ctx 512.
void expect_tiny_layout(const gguf::GgufFile& f, int64_t n_vocab) {
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_NE(f.get_string("general.name").find("random weights"), std::string::npos);
  EXPECT_EQ(f.get_int("llama.embedding_length"), 256);
  EXPECT_EQ(f.get_int("llama.feed_forward_length"), 512);
  EXPECT_EQ(f.get_int("llama.block_count"), 2);
  EXPECT_EQ(f.get_int("llama.attention.head_count"), 4);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(f.get_int("llama.context_length"), 512);
  EXPECT_EQ(f.get_int("llama.rope.dimension_count"), 64);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("llama.rope.freq_base")), 10000.0f);
  ASSERT_NE(f.find("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(static_cast<int64_t>(f.find("tokenizer.ggml.tokens")->array_size()), n_vocab);

  const std::map<std::string, std::vector<int64_t>> shapes = {
      {"token_embd.weight", {256, n_vocab}},  {"output.weight", {256, n_vocab}},
      {"output_norm.weight", {256}},          {"blk.1.attn_norm.weight", {256}},
      {"blk.0.attn_q.weight", {256, 256}},    {"blk.0.attn_k.weight", {256, 128}},
      {"blk.1.attn_v.weight", {256, 128}},    {"blk.1.attn_output.weight", {256, 256}},
      {"blk.0.ffn_norm.weight", {256}},       {"blk.0.ffn_gate.weight", {256, 512}},
      {"blk.1.ffn_up.weight", {256, 512}},    {"blk.0.ffn_down.weight", {512, 256}},
  };
  EXPECT_EQ(f.tensors().size(), 3u + 2u * 9u);
  for (const auto& [name, shape] : shapes) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape, shape) << name;
  }
}

DType type_of(const gguf::GgufFile& f, const std::string& name) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (t == nullptr) ADD_FAILURE() << "missing " << name;
  return t ? t->type : DType::kI8;
}

TEST(MakeModel, TinyInEveryTypeHasTheExpectedTensorsAndTypes) {
  struct Case {
    const char* type;
    uint32_t file_type;
    DType matrix;
    DType output;
  };
  const Case cases[] = {
      {"f32", 0, DType::kF32, DType::kF32},     {"f16", 1, DType::kF16, DType::kF16},
      {"q8_0", 7, DType::kQ8_0, DType::kQ8_0},  {"q4_0", 2, DType::kQ4_0, DType::kQ6_K},
      {"q4_k_m", 15, DType::kQ4_K, DType::kQ6_K}, {"bf16", 32, DType::kBF16, DType::kBF16},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type);
    const gguf::GgufFile f(make(std::string("tiny-") + c.type, std::string("--type ") + c.type + " --seed 3"));
    const int64_t n_vocab = f.get_int("llama.vocab_size");
    EXPECT_GT(n_vocab, 256);  // the byte-level vocabulary: 256 bytes, merges, <s>, </s>
    expect_tiny_layout(f, n_vocab);
    EXPECT_EQ(f.get_int("general.file_type"), c.file_type);
    EXPECT_EQ(type_of(f, "blk.0.attn_norm.weight"), DType::kF32);
    EXPECT_EQ(type_of(f, "output_norm.weight"), DType::kF32);
    EXPECT_EQ(type_of(f, "token_embd.weight"), c.matrix);
    EXPECT_EQ(type_of(f, "blk.0.attn_q.weight"), c.matrix);
    EXPECT_EQ(type_of(f, "blk.1.ffn_up.weight"), c.matrix);
    EXPECT_EQ(type_of(f, "output.weight"), c.output);
    // Q4_K_M spends 6 bits on attn_v and ffn_down of the last eighth of the layers (and
    // every third); with 2 layers that is layer 1 only.
    const bool mix = std::string(c.type) == "q4_k_m";
    EXPECT_EQ(type_of(f, "blk.0.attn_v.weight"), c.matrix);
    EXPECT_EQ(type_of(f, "blk.0.ffn_down.weight"), c.matrix);
    EXPECT_EQ(type_of(f, "blk.1.attn_v.weight"), mix ? DType::kQ6_K : c.matrix);
    EXPECT_EQ(type_of(f, "blk.1.ffn_down.weight"), mix ? DType::kQ6_K : c.matrix);
  }
}

TEST(MakeModel, WeightsHaveTheIntendedScales) {
  const gguf::GgufFile f(make("tiny-scales", "--type f32 --seed 5"));
  const auto check = [&](const std::string& name, double sigma) {
    const auto [mean, sd] = moments(*f.find_tensor(name));
    EXPECT_NEAR(mean, 0.0, sigma * 0.05) << name;
    EXPECT_NEAR(sd, sigma, sigma * 0.03) << name;
  };
  check("token_embd.weight", 1.0);
  check("blk.0.attn_q.weight", 1.0 / 16);       // 1/sqrt(n_embd)
  check("blk.1.ffn_down.weight", 1.0 / std::sqrt(512.0));
  check("output.weight", 4.0 / 16);             // peaked logits
  const auto [norm_mean, norm_sd] = moments(*f.find_tensor("blk.0.ffn_norm.weight"));
  EXPECT_EQ(norm_mean, 1.0);
  EXPECT_EQ(norm_sd, 0.0);
  // Distinct tensors and layers get distinct values.
  const auto* a = f.find_tensor("blk.0.ffn_gate.weight");
  const auto* b = f.find_tensor("blk.0.ffn_up.weight");
  const auto* c = f.find_tensor("blk.1.ffn_gate.weight");
  EXPECT_NE(std::memcmp(a->data, b->data, a->n_bytes), 0);
  EXPECT_NE(std::memcmp(a->data, c->data, a->n_bytes), 0);
}

TEST(MakeModel, SameSeedSameBytesWhateverTheThreads) {
  const std::string a = make("seed-a", "--type q4_k_m --seed 42 -t 1");
  const std::string b = make("seed-b", "--type q4_k_m --seed 42 -t 2");
  const std::string c = make("seed-c", "--type q4_k_m --seed 43 -t 2");
  const std::string bytes_a = file_bytes(a);
  EXPECT_GT(bytes_a.size(), 500000u);
  EXPECT_TRUE(bytes_a == file_bytes(b));
  EXPECT_FALSE(bytes_a == file_bytes(c));
}

TEST(MakeModel, CopiesTheTokenizerFromAVocabFile) {
  const std::string vocab = shared_dir() + "/reference/vocab/ggml-vocab-llama-spm.gguf";
  const gguf::GgufFile source(vocab);
  const gguf::GgufFile f(make("tiny-spm", "--type q8_0 --vocab " + vocab));
  const int64_t n_vocab = static_cast<int64_t>(source.find("tokenizer.ggml.tokens")->array_size());
  EXPECT_EQ(n_vocab, 32000);
  expect_tiny_layout(f, n_vocab);
  int copied = 0;
  for (const auto& [key, value] : source.metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    const gguf::Value* v = f.find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_TRUE(*v == value) << key;
    ++copied;
  }
  EXPECT_GT(copied, 5);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
}

TEST(MakeModel, KeelLoadsAndRunsWhatItWrites) {
  const std::string tokens = temp_dir() + "/make_model_tokens.txt";
  {
    std::ofstream out(tokens);
    for (int id : {276, 72, 101, 108, 108, 111, 32, 119}) out << id << "\n";  // <s>-ish + bytes
  }
  for (const char* type : {"f32", "q4_k_m"}) {
    SCOPED_TRACE(type);
    const std::string model = make(std::string("tiny-run-") + type, std::string("--type ") + type);
    const std::string logits = temp_dir() + "/make_model_logits.f32";
    const Outcome r = keel("eval -m " + model + " --tokens " + tokens + " -o " + logits + " -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string raw = file_bytes(logits);
    const gguf::GgufFile f(model);
    const int64_t n_vocab = f.get_int("llama.vocab_size");
    ASSERT_EQ(raw.size(), 8u * static_cast<size_t>(n_vocab) * 4u);
    std::vector<float> v(raw.size() / 4);
    std::memcpy(v.data(), raw.data(), raw.size());
    // Finite, and with a real spread (peaked, not uniform noise): the top logit stands well
    // above the mean at every position.
    for (int pos = 0; pos < 8; ++pos) {
      double sum = 0, top = -1e30;
      for (int64_t i = 0; i < n_vocab; ++i) {
        const float x = v[static_cast<size_t>(pos * n_vocab + i)];
        ASSERT_TRUE(std::isfinite(x));
        sum += x;
        top = std::max(top, static_cast<double>(x));
      }
      EXPECT_GT(top - sum / static_cast<double>(n_vocab), 3.0) << "position " << pos;
    }
  }
}

TEST(MakeModel, OtherArchitecturesAndShapeOverrides) {
  // gemma3 with the options the KV-cache tests use: context, window, partial rotary dims.
  const gguf::GgufFile g(make("gemma3-kv", "--arch gemma3 --layers 7 --ctx 256 --sliding-window 32 --rope-dims 32"));
  EXPECT_EQ(g.get_string("general.architecture"), "gemma3");
  EXPECT_EQ(g.get_int("gemma3.block_count"), 7);
  EXPECT_EQ(g.get_int("gemma3.context_length"), 256);
  EXPECT_EQ(g.get_int("gemma3.attention.sliding_window"), 32);
  EXPECT_EQ(g.get_int("gemma3.rope.dimension_count"), 32);
  EXPECT_EQ(g.get_int("gemma3.attention.key_length"), 64);
  EXPECT_EQ(g.get_string("gemma3.rope.scaling.type"), "linear");
  const gguf::Value* pattern = g.find("gemma3.attention.sliding_window_pattern");
  ASSERT_NE(pattern, nullptr);
  EXPECT_EQ(pattern->as_array<bool>(), (std::vector<bool>{true, true, true, true, true, false, true}));
  EXPECT_EQ(g.find_tensor("output.weight"), nullptr);  // tied head
  ASSERT_NE(g.find_tensor("blk.6.attn_q_norm.weight"), nullptr);

  const gguf::GgufFile o(make("oss-mxfp4", "--arch gpt-oss --type mxfp4 --experts 8 --experts-used 4 --ff 128"));
  EXPECT_EQ(o.get_int("general.file_type"), 38);
  EXPECT_EQ(o.get_int("gpt-oss.expert_count"), 8);
  EXPECT_EQ(o.get_int("gpt-oss.expert_used_count"), 4);
  EXPECT_EQ(o.get_int("gpt-oss.expert_feed_forward_length"), 128);
  EXPECT_EQ(o.get_string("gpt-oss.rope.scaling.type"), "yarn");
  EXPECT_EQ(type_of(o, "blk.1.ffn_up_exps.weight"), DType::kMXFP4);
  EXPECT_EQ(type_of(o, "blk.1.attn_k.weight"), DType::kQ8_0);
  EXPECT_EQ(type_of(o, "blk.1.ffn_gate_inp.weight"), DType::kF32);
  EXPECT_EQ(o.find_tensor("blk.0.ffn_down_exps.weight")->shape, (std::vector<int64_t>{128, 256, 8}));

  // keel's loader runs a generated gemma2 end to end.
  const std::string tokens = temp_dir() + "/make_model_g2_tokens.txt";
  {
    std::ofstream out(tokens);
    for (int id : {72, 101, 108, 108, 111}) out << id << "\n";
  }
  const std::string model = make("gemma2-run", "--arch gemma2 --type q8_0 --vocab-size 320");
  const Outcome r = keel("eval -m " + model + " --tokens " + tokens + " -o " + temp_dir() + "/g2.f32 -t 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(file_bytes(temp_dir() + "/g2.f32").size(), 5u * 320u * 4u);
}

TEST(MakeModel, BadOptionsExitWithUsageErrors) {
  const std::string out = temp_dir() + "/bad.gguf";
  EXPECT_EQ(keel("make-model -o " + out + " --type q3_k").exit_code, 2);
  EXPECT_EQ(keel("make-model -o " + out + " --preset huge").exit_code, 2);
  EXPECT_EQ(keel("make-model -o " + out + " --arch gpt9").exit_code, 2);
  EXPECT_EQ(keel("make-model -o " + out + " --seed minus-one").exit_code, 2);
  EXPECT_EQ(keel("make-model --type f32").exit_code, 2);  // no -o
  EXPECT_EQ(keel("make-model -o " + out + " --vocab /nonexistent.gguf").exit_code, 2);
  // Options that make no sense for the architecture or shape are usage errors too.
  for (const char* args : {"--rope-dims 7", "--arch gemma3 --rope-dims 128", "--sliding-window 8",
                           "--arch qwen3 --type mxfp4", "--arch gemma2 --experts 4", "--kv-heads 3",
                           "--arch gemma2 --preset 1b", "--vocab-size 10", "--layers 0"}) {
    const Outcome bad = keel("make-model -o " + out + " " + args);
    EXPECT_EQ(bad.exit_code, 2) << args << ": " << bad.output;
  }
  EXPECT_NE(keel("make-model -o " + out + " --rope-dims 7").output.find("--rope-dims"), std::string::npos);
  // A vocab file that is not a GGUF: a clear runtime error (exit 1), no file written.
  const Outcome r = keel("make-model -o " + out + " --vocab " + shared_dir() + "/DESIGN.md");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("DESIGN.md"), std::string::npos) << r.output;
  EXPECT_FALSE(std::ifstream(out).good());
  const Outcome help = keel("make-model --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("q4_k_m"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("gpt-oss"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--sliding-window"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace keel::test
