// A decode step allocates nothing (issue: "no allocation per step"): once a shape has been
// seen, Model::forward into a kept logits buffer takes its views, ranges, kernel scratch and
// activation buffers from storage kept across steps. This binary counts every operator new.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "golden_support.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "support/count_allocations.h"
#include "synthetic_support.h"

namespace keel::test {
namespace {

struct AllocCase {
  const char* arch;
  const char* weights;
  bool flash;
  tensor::DType kv_type;
};

class ForwardAllocations : public ::testing::TestWithParam<AllocCase> {};

// Two sequences decoding side by side (the engine's continuous batch), then one alone: after
// one warm-up step of each shape, later steps within the same KV pages allocate nothing.
TEST_P(ForwardAllocations, DecodeStepsAllocateNothing) {
  const AllocCase c = GetParam();
  // Head dim 64, so every KV type (q8_0 too) and the integer SIMD kernels apply.
  model::SyntheticOptions o;
  o.arch = c.arch;
  o.weight_type = c.weights;
  o.overrides.head_dim = 64;
  o.seed = 5;
  const std::string label = std::string(c.arch) + "/" + c.weights;
  model::Model m(write_synthetic("alloc-" + std::string(c.arch) + "-" + c.weights, o));
  ThreadPool pool(2);
  m.prepare_weights(pool);
  // Pages of 64: the steps below stay inside the first page, so no page table grows.
  kv::KvCache cache(m.kv_layout(), kv_options(c.kv_type, 64, 512));
  const kv::SeqId a = cache.create(), b = cache.create();
  model::ForwardOptions fo;
  fo.flash_attention = c.flash;
  std::vector<float> logits;
  std::vector<model::BatchEntry> batch;
  for (int64_t i = 0; i < 5; ++i) {
    batch.push_back({static_cast<int32_t>(3 + i), i, a, i == 4});
    batch.push_back({static_cast<int32_t>(7 + i), i, b, i == 4});
  }
  m.forward(batch, cache, pool, fo, &logits);  // prefill both

  batch.resize(2);
  model::BatchEntry& ea = batch[0];
  model::BatchEntry& eb = batch[1];
  ea = {11, 5, a, true};
  eb = {12, 5, b, true};
  m.forward(batch, cache, pool, fo, &logits);  // warm-up of the two-row shape
  for (int64_t pos = 6; pos < 10; ++pos) {
    ea.pos = eb.pos = pos;
    const int64_t before = allocation_count();
    m.forward(batch, cache, pool, fo, &logits);
    EXPECT_EQ(allocation_count() - before, 0) << label << ": two-row step at " << pos;
  }
  std::vector<model::BatchEntry> one = {{13, 10, a, true}};
  m.forward(one, cache, pool, fo, &logits);  // warm-up of the one-row shape
  for (int64_t pos = 11; pos < 15; ++pos) {
    one[0].pos = pos;
    const int64_t before = allocation_count();
    m.forward(one, cache, pool, fo, &logits);
    EXPECT_EQ(allocation_count() - before, 0) << label << ": one-row step at " << pos;
  }
  EXPECT_EQ(logits.size(), static_cast<size_t>(m.n_vocab()));
}

std::string name(const ::testing::TestParamInfo<AllocCase>& info) {
  const AllocCase& c = info.param;
  std::string s = std::string(c.arch) + "_" + c.weights + (c.flash ? "_flash_" : "_plain_") +
                  tensor::dtype_name(c.kv_type);
  for (char& ch : s) {
    if (ch == '-') ch = '_';
  }
  return s;
}

using tensor::DType;
INSTANTIATE_TEST_SUITE_P(Model, ForwardAllocations,
                         ::testing::Values(AllocCase{"llama", "q4_0", true, DType::kQ8_0},
                                           AllocCase{"llama", "q4_k_m", false, DType::kF16},
                                           AllocCase{"llama", "f16", true, DType::kF16},
                                           AllocCase{"gemma3", "q8_0", true, DType::kF16},
                                           AllocCase{"gpt-oss", "q8_0", true, DType::kQ8_0},
                                           AllocCase{"qwen2", "f32", false, DType::kF32}),
                         name);

}  // namespace
}  // namespace keel::test
