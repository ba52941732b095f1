#include "engine/model_backend.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/fault.h"
#include "core/large_buffer.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/attention.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace keel::engine {
namespace {

kv::KvOptions kv_options(const MemoryConfig& c, int32_t page_tokens) {
  kv::KvOptions o;
  o.k_type = c.k_type;
  o.v_type = c.v_type;
  o.page_tokens = page_tokens;
  o.max_tokens = static_cast<int64_t>(c.n_ctx) * c.n_parallel;
  o.max_sequences = c.n_parallel + 1;
  o.max_batch_tokens = c.batch_tokens;
  return o;
}

MemoryConfig memory_config(const LoadOptions& o) {
  MemoryConfig c;
  c.n_ctx = o.engine.n_ctx;
  c.n_parallel = o.engine.n_parallel;
  c.batch_tokens = o.engine.batch_tokens;
  c.k_type = o.k_type;
  c.v_type = o.v_type;
  return c;
}

// Activations of one step (f32): per batch token the residual stream and norms, q/k/v,
// the attention output and the feed-forward intermediates; per slot a logits row and
// the sampler's working copy; the rows of scored prompts (kScoredRowsPerStep). An estimate from the shapes, deliberately generous.
uint64_t workspace_estimate(const model::HParams& hp, const MemoryConfig& c) {
  int64_t ff = std::max(hp.n_ff, hp.n_ff_expert * std::max<int64_t>(hp.n_expert_used, 1));
  int64_t qkv = hp.n_head * hp.head_dim_k + hp.n_head_kv * (hp.head_dim_k + hp.head_dim_v);
  int64_t per_token = 6 * hp.n_embd + qkv + hp.n_head * hp.head_dim_v + 3 * ff;
  uint64_t batch = static_cast<uint64_t>(c.batch_tokens) * static_cast<uint64_t>(per_token) * 4;
  // Two rows per slot (logits + the sampler's copy) and the rows of scored prompts.
  uint64_t logits = static_cast<uint64_t>(2 * c.n_parallel + kScoredRowsPerStep) * static_cast<uint64_t>(hp.n_vocab) * 4;
  return batch + logits;
}

class StreamTokenDecoder : public TokenDecoder {
 public:
  StreamTokenDecoder(const tokenizer::Tokenizer& t, bool render_special)
      : decoder_(t, tokenizer::DecodeOptions{.render_special = render_special, .strip_space_prefix = false}) {}
  std::string push(int32_t token) override { return decoder_.push(token); }
  std::string finish() override { return decoder_.finish(); }

 private:
  tokenizer::StreamDecoder decoder_;
};

}  // namespace

MemoryPlan plan_model_memory(const model::Model& model, const LoadOptions& options) {
  MemoryPlanInputs in;
  in.model = std::filesystem::path(options.model_path).filename().string();
  for (const gguf::TensorInfo& t : model.file().tensors()) in.weights_bytes += t.n_bytes;
  kv::KvLayout layout = model.kv_layout();
  const int32_t page_tokens = options.page_tokens;
  in.kv_bytes = [layout, page_tokens](const MemoryConfig& c) {
    return static_cast<uint64_t>(kv::KvCache::plan(layout, kv_options(c, page_tokens)).pool_bytes);
  };
  model::HParams hp = model.hparams();
  in.workspace_bytes = [hp](const MemoryConfig& c) { return workspace_estimate(hp, c); };
  in.config = memory_config(options);
  in.limit_bytes = options.mem_limit_bytes;
  if (in.limit_bytes) in.limit_source = "--mem-limit " + format_bytes(in.limit_bytes);
  return plan_memory(in);
}

LoadedModel open_model(const LoadOptions& options) {
  auto file = std::make_shared<const gguf::GgufFile>(options.model_path);
  LoadedModel loaded;
  loaded.model = std::make_shared<const model::Model>(file);
  loaded.tokenizer = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(*file));
  loaded.plan = plan_model_memory(*loaded.model, options);
  return loaded;
}

std::unique_ptr<Engine> start_engine(const LoadedModel& loaded, const LoadOptions& options) {
  require_fits(loaded.plan);
  // KEEL_FAULT=site:p[,seed=N] turns on fault injection (tests of a running server).
  if (const char* env = std::getenv("KEEL_FAULT"); env && *env) {
    fault_configure_from_env();
    log_warn(std::string("fault injection is ON (KEEL_FAULT=") + env + "): requests will fail at random");
  }
  auto backend = std::make_unique<ModelBackend>(loaded.model, loaded.tokenizer, options);
  return std::make_unique<Engine>(std::move(backend), options.engine);
}

ModelBackend::ModelBackend(std::shared_ptr<const model::Model> model,
                           std::shared_ptr<const tokenizer::Tokenizer> tokenizer, const LoadOptions& options)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)), flash_attention_(options.engine.flash_attention) {
  if (!model_ || !tokenizer_) throw Error(ErrorCode::kInvalidArgument, "model backend: model and tokenizer are required");
  int threads = options.engine.threads > 0 ? options.engine.threads : ThreadPool::default_threads();
  pool_ = std::make_unique<ThreadPool>(threads);
  // Pack now, on the pool, rather than inside the first requests' steps.
  const model::PrepareStats ps = model_->prepare_weights(*pool_);
  if (model_->resident_bytes() > 0) {
    log_info("engine: float weight matrices copied out of the mapping: " + format_bytes(model_->resident_bytes()));
  }
  if (ps.matrices_packed > 0) {
    log_info("engine: packed " + std::to_string(ps.matrices_packed) + " weight matrices (" +
             format_bytes(ps.packed_bytes) + ") in " + std::to_string(static_cast<int64_t>(ps.seconds * 1000)) +
             " ms; released " + format_bytes(ps.released_bytes) + " of mapped originals");
  }
  if (ps.matrices_packed > 0 || model_->resident_bytes() > 0) {
    log_info("engine: " + format_bytes(static_cast<size_t>(std::max<int64_t>(0, anon_huge_page_bytes()))) +
             " of memory on huge pages");
    if (transparent_huge_pages_mode() == "never") {
      // Decode streams every packed or copied byte per token; on 4 KiB pages each 4 KiB is a
      // TLB miss, which under a hypervisor cost up to 5x in generation speed (docs/PERFORMANCE.md).
      log_warn("engine: transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled is "
               "'never'): weights sit on 4 KiB pages and generation may be several times slower; "
               "'madvise' lets keel ask for huge pages");
    }
  }
  kv_ = std::make_unique<kv::KvCache>(model_->kv_layout(), kv_options(memory_config(options), options.page_tokens));
}

ModelBackend::~ModelBackend() = default;

int32_t ModelBackend::n_vocab() const { return static_cast<int32_t>(model_->n_vocab()); }

Backend::Opened ModelBackend::open(std::span<const int32_t> prompt, int64_t max_reuse) {
  int64_t n = std::min<int64_t>(kv_->lookup_prefix(prompt).n_tokens, max_reuse);
  Opened o;
  o.seq = n > 0 ? kv_->attach_prefix(prompt, n) : kv_->create();
  o.reused = kv_->length(o.seq);
  return o;
}

int64_t ModelBackend::length(SeqId seq) const { return kv_->length(seq); }

void ModelBackend::forward(std::span<const BatchEntry> batch, std::vector<float>* logits) {
  // Shape: one model::BatchEntry per entry, same order (a member: no allocation per step).
  entries_.resize(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    entries_[i] = {batch[i].token, batch[i].pos, batch[i].seq, batch[i].want_logits};
  }
  model::ForwardOptions fo;
  fo.flash_attention = flash_attention_;
  model_->forward(entries_, *kv_, *pool_, fo, logits);
}

void ModelBackend::publish(SeqId seq, std::span<const int32_t> tokens) { kv_->cache_prefix(seq, tokens); }

void ModelBackend::release(SeqId seq) { kv_->release(seq); }

int64_t ModelBackend::shift(SeqId seq, int64_t n_keep, int64_t n_discard) {
  return kv_->shift(seq, n_keep, n_discard, model_->k_rotator());
}

void ModelBackend::check_invariants() const { kv_->check_invariants(); }

KvUsage ModelBackend::kv_usage() const {
  kv::KvUsage u = kv_->usage();
  KvUsage out;
  for (int64_t n : u.pages_used) out.pages_used += n;
  for (int64_t n : u.pages_total) out.pages_total += n;
  out.pages_cached = u.prefix_nodes;
  return out;
}

int64_t ModelBackend::empty_attention_rows() const {
  return static_cast<int64_t>(kernels::empty_attention_rows());
}

std::unique_ptr<TokenDecoder> ModelBackend::make_decoder(bool render_special) const {
  return std::make_unique<StreamTokenDecoder>(*tokenizer_, render_special);
}

std::string ModelBackend::token_piece(int32_t token) const { return tokenizer_->token_to_piece(token); }

bool ModelBackend::is_end_of_generation(int32_t token) const { return tokenizer_->is_end_of_generation(token); }

}  // namespace keel::engine
