#include "engine/memory_plan.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace keel::engine {
namespace {

// A model whose KV costs 1 KiB per token per slot in f16 (half in q8_0-ish terms).
MemoryPlanInputs inputs(uint64_t limit) {
  MemoryPlanInputs in;
  in.model = "m.gguf";
  in.weights_bytes = 100 << 20;
  in.kv_bytes = [](const MemoryConfig& c) {
    uint64_t per_token = (c.k_type == tensor::DType::kQ8_0 ? 544 : 1024);
    return per_token * static_cast<uint64_t>(c.n_ctx) * static_cast<uint64_t>(c.n_parallel);
  };
  in.workspace_bytes = [](const MemoryConfig& c) { return static_cast<uint64_t>(c.batch_tokens) * 4096; };
  in.config.n_ctx = 32768;
  in.config.n_parallel = 4;
  in.config.batch_tokens = 512;
  in.limit_bytes = limit;
  in.limit_source = "--mem-limit";
  return in;
}

TEST(MemoryPlan, FitsAndAddsUp) {
  MemoryPlan p = plan_memory(inputs(1ull << 30));
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.kv_bytes, 1024ull * 32768 * 4);
  EXPECT_EQ(p.total_bytes, p.weights_bytes + p.kv_bytes + p.workspace_bytes);
  EXPECT_TRUE(p.alternatives.empty());
  EXPECT_NO_THROW(require_fits(p));
}

TEST(MemoryPlan, RefusalNamesFiguresAndOptionsThatFit) {
  // 100 MiB weights + 128 MiB f16 KV + 2 MiB workspace > 200 MiB; q8_0 (68 MiB) fits.
  MemoryPlan p = plan_memory(inputs(200ull << 20));
  ASSERT_FALSE(p.fits);
  std::vector<std::string> flags;
  for (const auto& a : p.alternatives) {
    flags.push_back(a.flags);
    EXPECT_LE(a.total_bytes, p.limit_bytes) << a.flags;
  }
  ASSERT_GE(flags.size(), 3u);
  EXPECT_EQ(flags[0], "-ctk q8_0 -ctv q8_0");
  EXPECT_EQ(flags[1].rfind("--ctx ", 0), 0u);
  EXPECT_EQ(flags[2], "--parallel 3");  // 96 MiB of KV: the most slots that fit
  // The context offered is the largest multiple of 256 that fits.
  int32_t ctx = std::stoi(flags[1].substr(6));
  MemoryPlanInputs in = inputs(200ull << 20);
  MemoryConfig c = in.config;
  c.n_ctx = ctx;
  EXPECT_LE(in.weights_bytes + in.kv_bytes(c) + in.workspace_bytes(c), in.limit_bytes);
  c.n_ctx = ctx + 256;
  EXPECT_GT(in.weights_bytes + in.kv_bytes(c) + in.workspace_bytes(c), in.limit_bytes);
  try {
    require_fits(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    std::string m = e.what();
    for (const char* want : {"weights 100.00 MiB", "KV cache 128.00 MiB", "limit 200.00 MiB", "-ctk q8_0 -ctv q8_0",
                             "--parallel 3", "--mem-limit"}) {
      EXPECT_NE(m.find(want), std::string::npos) << want << " not in: " << m;
    }
  }
  std::string text = p.to_text(), json = p.to_json();
  EXPECT_NE(text.find("DOES NOT FIT"), std::string::npos);
  EXPECT_NE(json.find("\"fits\": false"), std::string::npos);
  EXPECT_NE(json.find("\"flags\": \"-ctk q8_0 -ctv q8_0\""), std::string::npos);
}

TEST(MemoryPlan, NothingFitsWhenTheWeightsAloneExceedTheLimit) {
  MemoryPlan p = plan_memory(inputs(50ull << 20));
  EXPECT_FALSE(p.fits);
  EXPECT_TRUE(p.alternatives.empty());
  EXPECT_NE(p.to_text().find("no smaller configuration fits"), std::string::npos);
  EXPECT_THROW(require_fits(p), Error);
}

TEST(MemoryPlan, AlternativesTheModelCannotUseAreNotOffered) {
  MemoryPlanInputs in = inputs(200ull << 20);
  auto base = in.kv_bytes;
  in.kv_bytes = [base](const MemoryConfig& c) -> uint64_t {
    if (c.k_type == tensor::DType::kQ8_0) throw Error(ErrorCode::kUnsupported, "head size not a multiple of 32");
    return base(c);
  };
  MemoryPlan p = plan_memory(in);
  ASSERT_FALSE(p.fits);
  ASSERT_FALSE(p.alternatives.empty());
  for (const auto& a : p.alternatives) EXPECT_EQ(a.flags.find("q8_0"), std::string::npos) << a.flags;
}

TEST(MemoryPlan, DefaultLimitIsAvailableMemory) {
  MemoryPlan p = plan_memory(inputs(0));
  EXPECT_GT(p.limit_bytes, 0u);
  EXPECT_NE(p.limit_source.find("MemAvailable"), std::string::npos);
}

TEST(MemoryPlan, ParsesMeminfoAndSizes) {
  EXPECT_EQ(parse_meminfo_available("MemTotal:       16000000 kB\nMemFree:  1 kB\nMemAvailable:    8000000 kB\n"),
            8000000ull * 1024);
  EXPECT_THROW(parse_meminfo_available("MemTotal: 1 kB\n"), Error);
  EXPECT_EQ(parse_byte_size("8G"), 8ull << 30);
  EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("2kb"), 2048u);
  for (const char* bad : {"", "G", "-1G", "8X", "1e99T", "nan"}) EXPECT_THROW(parse_byte_size(bad), Error) << bad;
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(3ull << 29), "1.50 GiB");
}

}  // namespace
}  // namespace keel::engine
