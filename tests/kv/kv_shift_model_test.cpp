// Context shift on a real model whose rope dimensions are fewer than head_dim (incident 3
// of DESIGN.md: a shift crashed on a shape assert with partial rotary dimensions). The
// qwen3 reference set is rewritten with rope.dimension_count 16 of head_dim 32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gguf/gguf.h"
#include "kv_model_util.h"
#include "support/paths.h"

namespace keel::kv::test {
namespace {

using tensor::DType;

std::string partial_rope_model() {
  const std::string path = keel::test::temp_dir() + "/qwen3-rope16.gguf";
  gguf::GgufFile in(keel::test::reference_path("qwen3", "model.gguf"));
  gguf::GgufWriter w;
  for (const auto& [k, v] : in.metadata()) w.set(k, v);
  w.set("qwen3.rope.dimension_count", gguf::Value::u32(16));
  for (const auto& t : in.tensors()) {
    w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  }
  w.write(path);
  return path;
}

KvOptions shift_options(DType k) {
  KvOptions o;
  o.k_type = k;
  o.v_type = DType::kF16;
  o.page_tokens = 16;
  o.max_tokens = 256;
  o.max_sequences = 4;
  return o;
}

TEST(KvShiftModel, PartialRotaryDimsAreRotatedAndTheRestKept) {
  const model::Model m(partial_rope_model());
  ASSERT_EQ(m.hparams().n_rot, 16);
  ASSERT_EQ(m.hparams().head_dim_k, 32);
  ThreadPool pool(1);
  KvCache cache(m.kv_layout(), shift_options(DType::kF32));
  const SeqId s = cache.create();
  std::vector<TokenId> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(static_cast<TokenId>(1 + (i * 37) % 500));
  feed_batch(m, cache, pool, {{s, tokens}}, true);
  const int64_t width = m.hparams().n_head_kv * m.hparams().head_dim_k;
  const int32_t layers = m.kv_layout().n_layers();
  std::vector<std::vector<float>> before(layers * 40, std::vector<float>(width));
  for (int32_t l = 0; l < layers; ++l) {
    for (int64_t p = 0; p < 40; ++p) cache.read_k(s, l, p, before[l * 40 + p].data());
  }
  const auto rotate = m.k_rotator();
  ASSERT_EQ(cache.shift(s, 4, 12, rotate), 28);
  cache.check_invariants();
  std::vector<float> row(width);
  for (int32_t l = 0; l < layers; ++l) {
    for (int64_t q = 0; q < 28; ++q) {
      const auto& old = before[l * 40 + (q < 4 ? q : q + 12)];
      cache.read_k(s, l, q, row.data());
      for (int64_t h = 0; h < m.hparams().n_head_kv; ++h) {
        for (int64_t i = 16; i < 32; ++i) {
          ASSERT_EQ(row[h * 32 + i], old[h * 32 + i]) << "layer " << l << " q " << q << " dim " << i;
        }
      }
      if (q < 4) continue;
      rotate(l, row.data(), 1, 12);  // back to the old position
      for (int64_t e = 0; e < width; ++e) ASSERT_NEAR(row[e], old[e], 1e-4) << "q " << q;
    }
  }
  // Decoding goes on after the shift.
  const auto logits = next_logits(m, cache, pool, s, 5, true);
  for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

TEST(KvShiftModel, QuantizedKShiftsAndDecodes) {
  const model::Model m(partial_rope_model());
  ThreadPool pool(1);
  for (DType k : {DType::kQ8_0, DType::kQ4_0, DType::kF16}) {
    KvCache cache(m.kv_layout(), shift_options(k));
    const SeqId s = cache.create();
    std::vector<TokenId> tokens;
    for (int i = 0; i < 50; ++i) tokens.push_back(static_cast<TokenId>(1 + (i * 11) % 500));
    feed_batch(m, cache, pool, {{s, tokens}}, false);
    ASSERT_EQ(cache.shift(s, 1, 25, m.k_rotator()), 25);
    cache.check_invariants();
    feed_batch(m, cache, pool, {{s, {7, 8, 9}}}, false);
    const auto logits = next_logits(m, cache, pool, s, 5, false);
    for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << tensor::dtype_name(k);
  }
}

}  // namespace
}  // namespace keel::kv::test
