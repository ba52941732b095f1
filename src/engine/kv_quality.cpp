#include "engine/kv_quality.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace keel::engine {
namespace {

constexpr int64_t kChunk = 256;  // tokens per forward pass (bounds the workspace)

// One sequence in its own cache, fed token by token or in chunks.
class Sequence {
 public:
  Sequence(const model::Model& model, const KvTypePair& types, int64_t capacity, const KvQualityOptions& o)
      : model_(model), pool_(o.threads > 0 ? o.threads : ThreadPool::default_threads()) {
    kv::KvOptions kvo;
    kvo.k_type = types.k;
    kvo.v_type = types.v;
    kvo.max_sequences = 1;
    kvo.max_batch_tokens = kChunk;
    kvo.max_tokens = ((capacity + kvo.page_tokens - 1) / kvo.page_tokens + 1) * kvo.page_tokens;
    cache_ = std::make_unique<kv::KvCache>(model.kv_layout(), kvo);
    seq_ = cache_->create();
    forward_.flash_attention = o.flash_attention;
  }

  // Appends `tokens`; returns the logits rows [n][n_vocab] of positions >= first_logit_pos.
  std::vector<float> feed(std::span<const int32_t> tokens, int64_t first_logit_pos) {
    std::vector<float> out;
    for (size_t begin = 0; begin < tokens.size(); begin += kChunk) {
      const size_t end = std::min(tokens.size(), begin + static_cast<size_t>(kChunk));
      std::vector<model::BatchEntry> batch;
      for (size_t i = begin; i < end; ++i) {
        batch.push_back({tokens[i], pos_, seq_, pos_ >= first_logit_pos});
        ++pos_;
      }
      const std::vector<float> part = model_.forward(batch, *cache_, pool_, forward_);
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }

  int64_t position() const { return pos_; }

 private:
  const model::Model& model_;
  ThreadPool pool_;
  std::unique_ptr<kv::KvCache> cache_;
  kv::SeqId seq_ = 0;
  int64_t pos_ = 0;
  model::ForwardOptions forward_;
};

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// log-softmax of a logit row, in double.
std::vector<double> log_softmax(std::span<const float> logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - max);
  const double log_z = max + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - log_z;
  return out;
}

}  // namespace

std::string KvTypePair::name() const {
  return std::string(tensor::dtype_name(k)) + "/" + tensor::dtype_name(v);
}

double kl_divergence_logits(std::span<const float> p_logits, std::span<const float> q_logits) {
  if (p_logits.size() != q_logits.size() || p_logits.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "kl_divergence_logits: rows of " + std::to_string(p_logits.size()) +
                                                 " and " + std::to_string(q_logits.size()) + " logits");
  }
  const std::vector<double> lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);  // rounding can leave -1e-17 for identical rows
}

KvQualityReport measure_kv_quality(const model::Model& model, std::span<const int32_t> prompt,
                                   std::span<const KvTypePair> candidates, const KvQualityOptions& o) {
  if (prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "kv quality: empty prompt");
  if (o.n_generate < 1) {
    throw Error(ErrorCode::kInvalidArgument, "kv quality: n_generate must be >= 1, got " + std::to_string(o.n_generate));
  }
  const int64_t n_vocab = model.n_vocab();
  for (int32_t t : prompt) {
    if (t < 0 || t >= n_vocab) {
      throw Error(ErrorCode::kInvalidArgument, "kv quality: prompt token " + std::to_string(t) +
                                                   " outside the vocabulary (" + std::to_string(n_vocab) + ")");
    }
  }
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  const int64_t n_gen = o.n_generate;
  const int64_t capacity = n_prompt + n_gen;

  KvQualityReport report;
  report.baseline = o.baseline;
  report.prompt_tokens = n_prompt;

  // Baseline: greedy generation; base[i] is the distribution that chose token i.
  std::vector<float> base;  // [n_gen][n_vocab]
  {
    Sequence seq(model, o.baseline, capacity, o);
    std::vector<float> row = seq.feed(prompt, n_prompt - 1);
    for (int64_t i = 0; i < n_gen; ++i) {
      const int32_t token = argmax(row);
      base.insert(base.end(), row.begin(), row.end());
      report.baseline_tokens.push_back(token);
      if (i + 1 < n_gen) row = seq.feed(std::span<const int32_t>(&token, 1), seq.position());
    }
  }

  // Candidates: the prompt plus the baseline's tokens but the last, logits from the
  // prompt's last position on: the same n_gen distributions, in one teacher-forced pass.
  std::vector<int32_t> forced(prompt.begin(), prompt.end());
  forced.insert(forced.end(), report.baseline_tokens.begin(), report.baseline_tokens.end() - 1);
  for (const KvTypePair& types : candidates) {
    Sequence seq(model, types, capacity, o);
    const std::vector<float> cand = seq.feed(forced, n_prompt - 1);
    KvQualityResult r;
    r.types = types;
    r.positions = n_gen;
    int64_t agree = 0;
    for (int64_t i = 0; i < n_gen; ++i) {
      const std::span<const float> b(base.data() + i * n_vocab, static_cast<size_t>(n_vocab));
      const std::span<const float> c(cand.data() + i * n_vocab, static_cast<size_t>(n_vocab));
      const double kl = kl_divergence_logits(b, c);
      r.mean_kl += kl;
      r.max_kl = std::max(r.max_kl, kl);
      if (argmax(c) == report.baseline_tokens[i]) {
        ++agree;
      } else if (r.first_divergence < 0) {
        r.first_divergence = i;
      }
    }
    r.mean_kl /= static_cast<double>(n_gen);
    r.top1_agreement = static_cast<double>(agree) / static_cast<double>(n_gen);
    r.degraded = r.mean_kl > o.max_mean_kl || r.top1_agreement < o.min_top1;
    report.results.push_back(r);
  }
  return report;
}

std::string describe(const KvQualityResult& r, const KvTypePair& baseline) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s vs %s: mean KL %.4g, max %.4g, top-1 %.1f%% over %lld positions, ",
                r.types.name().c_str(), baseline.name().c_str(), r.mean_kl, r.max_kl, 100.0 * r.top1_agreement,
                static_cast<long long>(r.positions));
  std::string s = buf;
  s += r.first_divergence < 0 ? "greedy output identical"
                              : "greedy diverges at token " + std::to_string(r.first_divergence);
  return s;
}

const char* kv_check_prompt() {
  return "The lighthouse keeper climbed the narrow stairs every evening at dusk. He trimmed the wick, "
         "polished the great lens, and wrote the weather in a worn leather book: wind from the west, "
         "a grey sea, two fishing boats returning late. One night a storm came in faster than the "
         "forecast had promised, and the keeper watched the beam sweep across the waves while he "
         "waited for the last boat to round the point.";
}

}  // namespace keel::engine
