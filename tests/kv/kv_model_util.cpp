#include "kv_model_util.h"

#include <algorithm>

#include "model/batch.h"

namespace keel::kv::test {

void feed_batch(const model::Model& m, KvCache& cache, ThreadPool& pool,
                const std::vector<std::pair<SeqId, std::vector<TokenId>>>& work, bool flash) {
  std::vector<model::BatchEntry> batch;
  size_t longest = 0;
  for (const auto& w : work) longest = std::max(longest, w.second.size());
  for (size_t i = 0; i < longest; ++i) {
    for (const auto& [seq, tokens] : work) {
      if (i < tokens.size()) {
        batch.push_back({tokens[i], cache.length(seq) + static_cast<int64_t>(i), seq, false});
      }
    }
  }
  model::ForwardOptions fo;
  fo.flash_attention = flash;
  m.forward(batch, cache, pool, fo);
}

std::vector<float> next_logits(const model::Model& m, KvCache& cache, ThreadPool& pool,
                               SeqId seq, TokenId probe, bool flash) {
  const SeqId f = cache.fork(seq, cache.length(seq));
  const model::BatchEntry e{probe, cache.length(f), f, true};
  model::ForwardOptions fo;
  fo.flash_attention = flash;
  std::vector<float> logits;
  try {
    logits = m.forward({&e, 1}, cache, pool, fo);
  } catch (...) {
    cache.release(f);
    throw;
  }
  cache.release(f);
  return logits;
}

std::vector<float> fresh_next_logits(const model::Model& m, const KvOptions& options,
                                     ThreadPool& pool, const std::vector<TokenId>& tokens,
                                     TokenId probe, bool flash) {
  // One batch of every token: the sliding pools must hold all of it at once (pool sizes
  // do not change results).
  KvOptions o = options;
  o.max_batch_tokens = std::max<int64_t>(o.max_batch_tokens, static_cast<int64_t>(tokens.size()) + 1);
  KvCache fresh(m.kv_layout(), o);
  const SeqId s = fresh.create();
  std::vector<model::BatchEntry> batch;
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.push_back({tokens[i], static_cast<int64_t>(i), s, false});
  }
  batch.push_back({probe, static_cast<int64_t>(tokens.size()), s, true});
  model::ForwardOptions fo;
  fo.flash_attention = flash;
  return m.forward(batch, fresh, pool, fo);
}

}  // namespace keel::kv::test
