// Architecture details that the reference sets pin down only partly: gemma3's sliding
// pattern from metadata, and gpt-oss experts stored in every supported weight type.
#include <cstring>
#include <functional>
#include <optional>

#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf.h"
#include "golden_support.h"
#include "kernels/matmul_path.h"
#include "support/paths.h"

namespace keel::test {
namespace {

// Copies a GGUF file; `convert` may give a tensor (stored F32) a new type, and
// `roundtrip` then stores the converted values back as F32 (same numbers, plain type).
std::string write_converted(
    const std::string& src, const std::string& name,
    const std::function<std::optional<tensor::DType>(const std::string&)>& convert,
    bool roundtrip, const std::function<void(gguf::GgufWriter&)>& meta = {}) {
  return copy_gguf(
      src, name,
      [&](TensorCopy& t) {
        const auto to = convert(t.name);
        if (!to || t.type != tensor::DType::kF32) return true;
        const int64_t row = t.shape[0], rows = static_cast<int64_t>(t.data.size() / 4) / row;
        const size_t rb = tensor::row_bytes(*to, row);
        std::vector<uint8_t> q(rb * rows);
        auto* f = reinterpret_cast<float*>(t.data.data());
        for (int64_t r = 0; r < rows; ++r) tensor::quantize_row(*to, f + r * row, q.data() + r * rb, row);
        if (roundtrip) {
          for (int64_t r = 0; r < rows; ++r) tensor::dequantize_row(*to, q.data() + r * rb, f + r * row, row);
        } else {
          t.data = std::move(q);
          t.type = *to;
        }
        return true;
      },
      meta);
}

std::vector<int32_t> windows(const model::Model& m) {
  std::vector<int32_t> w;
  for (const auto& l : m.hparams().layers) w.push_back(l.window);
  return w;
}

TEST(Gemma3, SlidingPatternDefaultAndFromMetadata) {
  const std::string src = reference_path("gemma3", "model.gguf");
  model::Model dflt(src);
  EXPECT_EQ(windows(dflt), (std::vector<int32_t>{8, 8, 8, 8, 8, 0}));
  // Local layers: base 10000 unscaled; the global one: freq_base with linear ×8.
  EXPECT_EQ(dflt.hparams().layers[0].rope.base, 10000.0f);
  EXPECT_EQ(dflt.hparams().layers[0].rope.freq_scale, 1.0f);
  EXPECT_EQ(dflt.hparams().layers[5].rope.base, 1e6f);
  EXPECT_EQ(dflt.hparams().layers[5].rope.freq_scale, 0.125f);
  EXPECT_EQ(dflt.kv_layout().layer_window, windows(dflt));

  auto none = [](const std::string&) { return std::optional<tensor::DType>(); };
  const auto period = write_converted(src, "g3_period", none, false, [](gguf::GgufWriter& w) {
    w.set("gemma3.attention.sliding_window_pattern", gguf::Value::u32(2));
  });
  EXPECT_EQ(windows(model::Model(period)), (std::vector<int32_t>{8, 0, 8, 0, 8, 0}));
  const auto flags = write_converted(src, "g3_flags", none, false, [](gguf::GgufWriter& w) {
    w.set("gemma3.attention.sliding_window_pattern",
          gguf::Value::array(std::vector<bool>{false, true, true, false, true, true}));
  });
  model::Model f(flags);
  EXPECT_EQ(windows(f), (std::vector<int32_t>{0, 8, 8, 0, 8, 8}));
  EXPECT_EQ(f.hparams().layers[0].rope.base, 1e6f);  // global layers take the global rope
  const auto bad = write_converted(src, "g3_bad", none, false, [](gguf::GgufWriter& w) {
    w.set("gemma3.attention.sliding_window_pattern", gguf::Value::array(std::vector<bool>{true}));
  });
  EXPECT_THROW(model::Model{bad}, Error);
}

class GptOssExpertTypes : public ::testing::TestWithParam<tensor::DType> {};

TEST_P(GptOssExpertTypes, QuantizedExpertsComputeWhatTheirValuesSay) {
  const tensor::DType type = GetParam();
  const std::string src = reference_path("gpt-oss", "model.gguf");
  auto experts = [&](const std::string& n) -> std::optional<tensor::DType> {
    if (n.find("_exps.weight") != std::string::npos) return type;
    return std::nullopt;
  };
  const std::string name = std::string("oss_") + tensor::dtype_name(type);
  model::Model quantized(write_converted(src, name, experts, false));
  model::Model plain(write_converted(src, name + "_f32", experts, true));
  const auto tokens = read_token_ids(reference_path("gpt-oss", "tokens.txt"));
  ThreadPool pool(2);
  RunOptions o;
  o.flash = true;
  // With f32 activations the quantized experts give exactly their dequantized values'
  // logits (both dequantize to the same rows, then dot in the same order).
  kernels::ScopedMatmulPath ref(kernels::MatmulPath::kReference);
  const auto a = run_logits(quantized, tokens, pool, o);
  const auto b = run_logits(plain, tokens, pool, o);
  EXPECT_TRUE(bitwise_equal(a, b)) << tensor::dtype_name(type);
  // And they stay near the F32 reference (weights rounding only moves them so far).
  const auto f32_ref = read_f32(reference_path("gpt-oss", "logits.f32"));
  const Diff d = compare(a, f32_ref, quantized.n_vocab(), 1.0);
  std::printf("[experts] gpt-oss experts %-6s vs F32 reference: max|d| %.4f mean|d| %.4f\n",
              tensor::dtype_name(type), d.max_abs, d.mean_abs);
  EXPECT_LT(d.mean_abs, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Model, GptOssExpertTypes,
                         ::testing::Values(tensor::DType::kF16, tensor::DType::kQ8_0,
                                           tensor::DType::kQ4_0, tensor::DType::kMXFP4),
                         [](const auto& info) { return std::string(tensor::dtype_name(info.param)); });

}  // namespace
}  // namespace keel::test
