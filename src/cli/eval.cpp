// keel eval — feeds token ids (one per line) through a model and writes the logits of
// every position as raw float32 [n_tokens][n_vocab] (the layout of ../shared/reference),
// printing the perplexity of the sequence to stderr. For comparing keel with other engines.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/kv_type_option.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "tensor/types.h"

namespace keel::cli {
namespace {

struct EvalOptions {
  std::string model;
  std::string tokens;
  std::string output;
  bool one_by_one = false;
  std::string flash_attn = "off";
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  int threads = 0;
  int64_t batch = 0;  // tokens per forward call; 0 = all at once
};

std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, path + ": cannot open token file");
  std::vector<int32_t> ids;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(line.substr(first), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const auto rest = line.find_first_not_of(" \t\r", first + used);
    if (used == 0 || rest != std::string::npos || v < 0 || v > INT32_MAX) {
      throw Error(ErrorCode::kInvalidArgument,
                  path + ":" + std::to_string(line_no) + ": not a token id: '" + line + "'");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) throw Error(ErrorCode::kInvalidArgument, path + ": no token ids");
  return ids;
}

// Mean negative log-likelihood of token i+1 under the logits of position i, exponentiated.
double perplexity(const std::vector<float>& logits, const std::vector<int32_t>& ids,
                  int64_t n_vocab) {
  if (ids.size() < 2) return NAN;
  double nll = 0.0;
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    const float* row = logits.data() + i * n_vocab;
    float max = row[0];
    for (int64_t j = 1; j < n_vocab; ++j) max = std::max(max, row[j]);
    double sum = 0.0;
    for (int64_t j = 0; j < n_vocab; ++j) sum += std::exp(double(row[j]) - max);
    nll -= double(row[ids[i + 1]]) - max - std::log(sum);
  }
  return std::exp(nll / static_cast<double>(ids.size() - 1));
}

int run_eval(const EvalOptions& o) {
  if (o.flash_attn != "on" && o.flash_attn != "off") {
    throw Error(ErrorCode::kInvalidArgument, "--flash-attn must be 'on' or 'off', got '" +
                                                 o.flash_attn + "'");
  }
  const auto ids = read_ids(o.tokens);
  model::Model m(o.model);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= m.n_vocab()) {
      throw Error(ErrorCode::kInvalidArgument,
                  o.tokens + ": token id " + std::to_string(ids[i]) + " at line " +
                      std::to_string(i + 1) + " outside the vocabulary (" +
                      std::to_string(m.n_vocab()) + ")");
    }
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  kv::KvOptions kvo;
  kvo.k_type = parse_kv_type(o.cache_type_k, "-ctk");
  kvo.v_type = parse_kv_type(o.cache_type_v, "-ctv");
  kvo.max_tokens = ((n + kvo.page_tokens - 1) / kvo.page_tokens + 1) * kvo.page_tokens;
  kvo.max_sequences = 1;
  kv::KvCache cache(m.kv_layout(), kvo);
  const kv::SeqId seq = cache.create();
  ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::default_threads());
  model::ForwardOptions fo;
  fo.flash_attention = o.flash_attn == "on";

  const int64_t chunk = o.one_by_one ? 1 : (o.batch > 0 ? o.batch : n);
  std::vector<float> logits;
  logits.reserve(static_cast<size_t>(n * m.n_vocab()));
  for (int64_t begin = 0; begin < n; begin += chunk) {
    std::vector<model::BatchEntry> batch;
    for (int64_t i = begin; i < std::min(n, begin + chunk); ++i) {
      batch.push_back({ids[i], i, seq, true});
    }
    const auto part = m.forward(batch, cache, pool, fo);
    logits.insert(logits.end(), part.begin(), part.end());
  }

  std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(logits.data()),
            static_cast<std::streamsize>(logits.size() * sizeof(float)));
  out.close();
  if (!out) throw Error(ErrorCode::kIo, o.output + ": cannot write logits");
  std::fprintf(stderr, "keel eval: %lld tokens, %lld logits each -> %s\n",
               static_cast<long long>(n), static_cast<long long>(m.n_vocab()),
               o.output.c_str());
  std::fprintf(stderr, "perplexity: %.6f over %lld predicted tokens\n",
               perplexity(logits, ids, m.n_vocab()), static_cast<long long>(n - 1));
  return 0;
}

CommandRegistrar reg("eval", "Write the logits of every position of a token sequence",
                     [](CLI::App& app) {
                       auto o = std::make_shared<EvalOptions>();
                       app.add_option("-m,--model", o->model, "GGUF model")->required();
                       app.add_option("--tokens", o->tokens, "token ids, one per line")->required();
                       app.add_option("-o,--output", o->output, "output .f32 file")->required();
                       app.add_flag("--one-by-one", o->one_by_one, "one token per forward pass");
                       app.add_option("--flash-attn", o->flash_attn, "on|off (default off)");
                       app.add_option("--ctk,--cache-type-k", o->cache_type_k, "K cache type (f16)");
                       app.add_option("--ctv,--cache-type-v", o->cache_type_v, "V cache type (f16)");
                       app.add_option("-t,--threads", o->threads, "threads (default: all)");
                       app.add_option("-b,--batch", o->batch, "tokens per forward pass (default all)");
                       return [o] { return run_eval(*o); };
                     });

}  // namespace
}  // namespace keel::cli
