// The engine on a `keel make-model` model (llama tiny preset, q8_0 weights, q8_0 K and V,
// flash attention): a long prompt is prefilled in chunks while another stream keeps
// decoding in the same steps, and both outputs equal their solo runs; the long prompt is
// then served from the prefix cache.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "engine/model_backend.h"
#include "engine_test_util.h"
#include "hooked_backend.h"
#include "model/model.h"
#include "model/synthetic.h"
#include "support/paths.h"

namespace keel::engine::test {
namespace {

LoadOptions tiny_options(int32_t parallel, int32_t batch) {
  static const std::string path = [] {
    std::string p = keel::test::temp_dir() + "/tiny-q8_0.gguf";
    model::SyntheticOptions s;
    s.preset = "tiny";
    s.weight_type = "q8_0";
    s.seed = 11;
    s.n_threads = 2;
    model::write_synthetic_model(p, s);
    return p;
  }();
  LoadOptions o;
  o.model_path = path;
  o.engine.n_parallel = parallel;
  o.engine.batch_tokens = batch;
  o.engine.n_ctx = 512;
  o.engine.threads = 2;
  o.engine.flash_attention = true;
  o.engine.check_kv = true;
  o.k_type = tensor::DType::kQ8_0;
  o.v_type = tensor::DType::kQ8_0;
  o.mem_limit_bytes = 1ull << 30;
  return o;
}

const LoadedModel& tiny() {
  static const LoadedModel m = open_model(tiny_options(1, 512));
  return m;
}

Outcome solo(const Request& r) {
  LoadOptions o = tiny_options(1, 512);
  o.engine.threads = 1;  // the engine under test uses 2: results must not depend on it
  auto engine = start_engine(tiny(), o);
  RequestHandle h = engine->submit(r);
  return collect(h);
}

TEST(SyntheticEngine, StreamsKeepDecodingWhileALongPromptIsPrefilled) {
  const int32_t n_vocab = static_cast<int32_t>(tiny().model->n_vocab());
  // a decodes far longer than b's 7 prefill steps take, so their steps overlap however the
  // threads are scheduled (with 30 tokens a fast kernel could finish before b arrived).
  Request a = make_request(random_prompt(1, 8, n_vocab), 300);
  Request b = make_request(random_prompt(2, 420, n_vocab), 5, 9, 0.8f);
  a.ignore_eos = b.ignore_eos = true;
  Outcome solo_a = solo(a), solo_b = solo(b);

  LoadOptions o = tiny_options(2, 64);
  int mixed_steps = 0;  // steps with one stream's decode token beside another's prefill chunk
  auto backend = std::make_unique<HookedBackend>(std::make_unique<ModelBackend>(tiny().model, tiny().tokenizer, o),
                                                 [&](std::span<const BatchEntry> batch) {
                                                   std::map<SeqId, int> per_seq;
                                                   for (const BatchEntry& e : batch) ++per_seq[e.seq];
                                                   bool one = false, many = false;
                                                   for (auto& [seq, n] : per_seq) (n == 1 ? one : many) = true;
                                                   if (one && many) ++mixed_steps;
                                                 });
  Engine engine(std::move(backend), o.engine);
  RequestHandle ha = engine.submit(a);
  std::optional<Event> first = ha.next(std::chrono::seconds(60));  // a is decoding now
  ASSERT_TRUE(first.has_value());
  RequestHandle hb = engine.submit(b);
  Outcome out_b = collect(hb), out_a = collect(ha);
  out_a.tokens.insert(out_a.tokens.begin(), first->tokens.begin(), first->tokens.end());
  EXPECT_GE(mixed_steps, 3);  // 420 prompt tokens in chunks of at most 63 beside a's decode
  EXPECT_EQ(out_a.tokens, solo_a.tokens);
  EXPECT_EQ(out_b.tokens, solo_b.tokens);

  // The long prompt again: all but its last token come from the cache, same output.
  RequestHandle again = engine.submit(b);
  Outcome cached = collect(again);
  EXPECT_EQ(cached.usage.cached_tokens, 419);
  EXPECT_EQ(cached.tokens, solo_b.tokens);
  EXPECT_EQ(engine.stats().empty_attention_rows, 0);
}

}  // namespace
}  // namespace keel::engine::test
