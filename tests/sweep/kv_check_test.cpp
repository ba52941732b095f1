// serve --kv-check: the start-up check measures a quantized configuration (and skips an
// unquantized one), and its gauges render for /metrics only once set.
#include <gtest/gtest.h>

#include "engine/model_backend.h"
#include "support/paths.h"
#include "sweep/kv_check.h"

namespace keel::sweep {
namespace {

using tensor::DType;

TEST(KvCheck, MeasuresQuantizedKvAndRendersGauges) {
  engine::LoadOptions load;
  load.model_path = test::reference_path("qwen3", "model.gguf");
  load.engine.n_ctx = 256;
  load.engine.threads = 1;
  load.k_type = DType::kQ4_0;
  load.v_type = DType::kQ8_0;
  const engine::LoadedModel loaded = engine::open_model(load);
  const auto result = kv_startup_check(loaded, load);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->types.name(), "q4_0/q8_0");
  EXPECT_EQ(result->positions, 16);
  EXPECT_GT(result->mean_kl, 0.0);

  KvCheckMetrics metrics;
  EXPECT_EQ(metrics.prometheus(), "");
  metrics.set(result);
  const std::string text = metrics.prometheus();
  EXPECT_NE(text.find("# TYPE keel_kv_quality_mean_kl gauge\nkeel_kv_quality_mean_kl{ctk=\"q4_0\",ctv=\"q8_0\"} "),
            std::string::npos) << text;
  EXPECT_NE(text.find(std::string("keel_kv_quality_degraded{ctk=\"q4_0\",ctv=\"q8_0\"} ") +
                      (result->degraded ? "1" : "0")),
            std::string::npos) << text;

  load.k_type = load.v_type = DType::kF16;
  EXPECT_FALSE(kv_startup_check(loaded, load).has_value());
}

}  // namespace
}  // namespace keel::sweep
