// Helpers for KV cache tests that run real models: feeding tokens, and the next-token
// logits of a cached sequence versus a fresh cache fed the same tokens in one batch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace keel::kv::test {

// Appends tokens to each listed sequence in one forward pass (entries interleaved
// round-robin across sequences); returns no logits.
void feed_batch(const model::Model& m, KvCache& cache, ThreadPool& pool,
                const std::vector<std::pair<SeqId, std::vector<TokenId>>>& work, bool flash);

// Logits after `probe` is appended to seq (computed on a fork, so seq is unchanged).
std::vector<float> next_logits(const model::Model& m, KvCache& cache, ThreadPool& pool,
                               SeqId seq, TokenId probe, bool flash);

// The same, on a fresh cache with `options` fed tokens + probe in one batch.
std::vector<float> fresh_next_logits(const model::Model& m, const KvOptions& options,
                                     ThreadPool& pool, const std::vector<TokenId>& tokens,
                                     TokenId probe, bool flash);

}  // namespace keel::kv::test
