#include "golden_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "support/paths.h"

namespace keel::test {

std::vector<int32_t> read_token_ids(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, "cannot open " + path);
  std::vector<int32_t> ids;
  int64_t id;
  while (in >> id) ids.push_back(static_cast<int32_t>(id));
  return ids;
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(ErrorCode::kIo, "cannot open " + path);
  const auto size = static_cast<size_t>(in.tellg());
  std::vector<float> v(size / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

kv::KvOptions kv_options(tensor::DType type, int32_t page_tokens, int64_t max_tokens) {
  kv::KvOptions o;
  o.k_type = type;
  o.v_type = type;
  o.page_tokens = page_tokens;
  o.max_tokens = max_tokens;
  o.max_sequences = 4;
  return o;
}

std::vector<float> run_logits(const model::Model& m, const std::vector<int32_t>& tokens,
                              ThreadPool& pool, const RunOptions& opts) {
  kv::KvCache cache(m.kv_layout(), kv_options(opts.kv_type, opts.page_tokens, 1024));
  const kv::SeqId seq = cache.create();
  model::ForwardOptions fo;
  fo.flash_attention = opts.flash;
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t chunk = opts.chunk > 0 ? opts.chunk : n;
  std::vector<float> out;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    std::vector<model::BatchEntry> batch;
    for (int64_t i = begin; i < std::min(n, begin + chunk); ++i) {
      batch.push_back({tokens[i], i, seq, true});
    }
    auto logits = m.forward(batch, cache, pool, fo);
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

Diff compare(const std::vector<float>& got, const std::vector<float>& ref, int64_t n_vocab,
             double tie_margin) {
  Diff d;
  if (got.size() != ref.size() || n_vocab <= 0) {
    d.max_abs = INFINITY;
    return d;
  }
  const int64_t rows = static_cast<int64_t>(got.size()) / n_vocab;
  double sum = 0;
  int64_t agree = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = got.data() + r * n_vocab;
    const float* f = ref.data() + r * n_vocab;
    for (int64_t i = 0; i < n_vocab; ++i) {
      const double e = std::abs(double(g[i]) - f[i]);
      d.max_abs = std::max(d.max_abs, std::isnan(e) ? INFINITY : e);
      sum += e;
    }
    const int64_t ag = std::max_element(g, g + n_vocab) - g;
    const int64_t af = std::max_element(f, f + n_vocab) - f;
    if (ag == af) {
      ++agree;
    } else if (f[af] - f[ag] > tie_margin) {
      ++d.argmax_disagree_clear;
    }
  }
  d.mean_abs = sum / static_cast<double>(got.size());
  d.argmax_agree = rows ? double(agree) / rows : 1.0;
  return d;
}

std::string copy_gguf(const std::string& src, const std::string& name,
                      const std::function<bool(TensorCopy&)>& edit,
                      const std::function<void(gguf::GgufWriter&)>& meta) {
  gguf::GgufFile in(src);
  gguf::GgufWriter w;
  for (const auto& [k, v] : in.metadata()) w.set(k, v);
  if (meta) meta(w);
  for (const auto& t : in.tensors()) {
    TensorCopy c{t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.n_bytes)};
    if (!edit(c)) continue;
    w.add_tensor(c.name, c.type, c.shape, std::move(c.data));
  }
  const std::string path = temp_dir() + "/" + name + ".gguf";
  w.write(path);
  return path;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace keel::test
