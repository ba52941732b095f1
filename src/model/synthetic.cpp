// Synthetic model generator: plans an architecture row's tensors at a resolved shape,
// writes its metadata, and streams seeded weights into the file. See synthetic.h.
#include "model/synthetic.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "model/synthetic_tables.h"
#include "model/synthetic_vocab.h"
#include "tensor/types.h"

namespace keel::model {
namespace {

using synthetic::ArchSpec;
using synthetic::Dim;
using synthetic::Metadata;
using synthetic::Role;
using synthetic::TensorSpec;
using synthetic::WeightType;
using tensor::DType;

// ---- Seeded values ----------------------------------------------------------------------

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Fills a row with approximately N(0, sigma) values: the sum of four uniforms, rescaled
// to unit variance. Pure integer/IEEE arithmetic, so identical on every machine.
void random_row(uint64_t key, float sigma, float* out, int64_t n) {
  const float scale = sigma * 1.7320508f;  // sqrt(3): var(sum of 4 U(0,1)) = 1/3
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t a = splitmix64(key + 2 * static_cast<uint64_t>(i));
    const uint64_t b = splitmix64(key + 2 * static_cast<uint64_t>(i) + 1);
    const float u = static_cast<float>(a >> 40) + static_cast<float>((a >> 8) & 0xffffff) +
                    static_cast<float>(b >> 40) + static_cast<float>((b >> 8) & 0xffffff);
    out[i] = (u * (1.0f / 16777216.0f) - 2.0f) * scale;
  }
}

// Standard deviation per role. Matrices use 1/sqrt(fan_in) so activations keep their
// scale; the output matrix is 4x that so logits have a spread of a few units and sampling
// is peaked rather than uniform. Biases and sinks are small offsets, visible but not
// dominating.
float sigma_for(Role role, int64_t fan_in) {
  const float base = 1.0f / std::sqrt(static_cast<float>(fan_in));
  switch (role) {
    case Role::kNorm: return 0.0f;
    case Role::kBias: return 0.1f;
    case Role::kSinks: return 1.0f;
    case Role::kEmbedding: return 1.0f;
    case Role::kOutput: return 4.0f * base;
    default: return base;
  }
}

// ---- Tensor plan ------------------------------------------------------------------------

struct PlannedTensor {
  std::string name;
  Role role;
  DType type;
  std::vector<int64_t> shape;  // GGUF order, ne[0] first
  int64_t rows() const {
    int64_t n = 1;
    for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
    return n;
  }
};

int64_t resolve(Dim d, const SyntheticShape& s, int64_t n_vocab) {
  switch (d) {
    case Dim::kEmbd: return s.n_embd;
    case Dim::kFF: return s.n_ff;
    case Dim::kVocab: return n_vocab;
    case Dim::kQ: return s.n_head * s.head_dim;
    case Dim::kKV: return s.n_head_kv * s.head_dim;
    case Dim::kHeadDim: return s.head_dim;
    case Dim::kHead: return s.n_head;
    case Dim::kExpert: return s.n_expert;
  }
  return 1;
}

std::vector<PlannedTensor> plan_tensors(const ArchSpec& arch, const SyntheticShape& s, int64_t n_vocab,
                                        const WeightType& w) {
  std::vector<PlannedTensor> out;
  auto add = [&](const TensorSpec& t, const std::string& name, int64_t layer) {
    PlannedTensor p{name, t.role, DType::kF32, {}};
    for (Dim d : t.dims) p.shape.push_back(resolve(d, s, n_vocab));
    const bool expert = t.dims.size() == 3;  // [n_in, n_out, n_expert]
    p.type = synthetic::tensor_type(w, t.role, expert, layer, s.n_layer, p.shape[0]);
    out.push_back(std::move(p));
  };
  for (const TensorSpec& t : arch.head) add(t, t.name, -1);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    for (const TensorSpec& t : arch.layer) add(t, "blk." + std::to_string(il) + "." + t.name, il);
  }
  for (const TensorSpec& t : arch.tail) add(t, t.name, -1);
  return out;
}

// ---- Metadata ---------------------------------------------------------------------------

// gemma3-style local/global flags, one per layer (true = sliding window).
std::vector<bool> sliding_flags(const ArchSpec& arch, int64_t n_layer) {
  std::vector<bool> flags(static_cast<size_t>(n_layer));
  for (int64_t il = 0; il < n_layer; ++il) flags[il] = (il + 1) % arch.global_every != 0;
  return flags;
}

Metadata model_metadata(const ArchSpec& arch, const SyntheticShape& s, const WeightType& w, int64_t n_vocab,
                        const std::string& name) {
  const std::string a = arch.name;
  auto u32 = [](int64_t v) { return gguf::Value::u32(static_cast<uint32_t>(v)); };
  Metadata m;
  m.emplace_back("general.architecture", gguf::Value::str(a));
  m.emplace_back("general.name", gguf::Value::str(name));
  m.emplace_back("general.file_type", gguf::Value::u32(w.file_type));
  if (w.base != DType::kF32 && w.base != DType::kF16 && w.base != DType::kBF16) {
    m.emplace_back("general.quantization_version", gguf::Value::u32(2));
  }
  m.emplace_back(a + ".vocab_size", u32(n_vocab));
  m.emplace_back(a + ".context_length", u32(s.n_ctx));
  m.emplace_back(a + ".embedding_length", u32(s.n_embd));
  m.emplace_back(a + ".block_count", u32(s.n_layer));
  m.emplace_back(a + ".feed_forward_length", u32(s.n_ff));
  m.emplace_back(a + ".attention.head_count", u32(s.n_head));
  m.emplace_back(a + ".attention.head_count_kv", u32(s.n_head_kv));
  // Without these keys loaders take n_embd / n_head, so an override that changes the head
  // width must write them whatever the architecture's converter does.
  if (arch.writes_head_dims || s.head_dim != s.n_embd / s.n_head) {
    m.emplace_back(a + ".attention.key_length", u32(s.head_dim));
    m.emplace_back(a + ".attention.value_length", u32(s.head_dim));
  }
  m.emplace_back(a + ".attention.layer_norm_rms_epsilon", gguf::Value::f32(arch.norm_eps));
  m.emplace_back(a + ".rope.freq_base", gguf::Value::f32(arch.rope_base));
  m.emplace_back(a + ".rope.dimension_count", u32(s.n_rot));
  if (arch.rope_scaling[0] != '\0') {
    m.emplace_back(a + ".rope.scaling.type", gguf::Value::str(arch.rope_scaling));
    m.emplace_back(a + ".rope.scaling.factor", gguf::Value::f32(arch.rope_scaling_factor));
    if (arch.rope_orig_ctx > 0) {
      m.emplace_back(a + ".rope.scaling.original_context_length", u32(arch.rope_orig_ctx));
    }
  }
  if (arch.sliding != synthetic::Sliding::kNone) {
    m.emplace_back(a + ".attention.sliding_window", u32(s.sliding_window));
  }
  if (arch.sliding == synthetic::Sliding::kPatternKey) {
    m.emplace_back(a + ".attention.sliding_window_pattern", gguf::Value::array(sliding_flags(arch, s.n_layer)));
  }
  if (arch.attn_softcap > 0.0f) m.emplace_back(a + ".attn_logit_softcapping", gguf::Value::f32(arch.attn_softcap));
  if (arch.final_softcap > 0.0f) m.emplace_back(a + ".final_logit_softcapping", gguf::Value::f32(arch.final_softcap));
  if (s.n_expert > 0) {
    m.emplace_back(a + ".expert_count", u32(s.n_expert));
    m.emplace_back(a + ".expert_used_count", u32(s.n_expert_used));
    m.emplace_back(a + ".expert_feed_forward_length", u32(s.n_ff));
  }
  return m;
}

// Generates and quantizes a tensor's rows straight into the writer's buffer, in parallel
// over rows. Each row depends only on (seed, name, row), never on the thread that made it.
gguf::GgufWriter::TensorFill make_fill(const PlannedTensor& t, uint64_t seed, ThreadPool& pool) {
  return [t, seed, &pool](uint8_t* dst, size_t n_bytes) {
    const int64_t ne0 = t.shape[0], rows = t.rows();
    const size_t row_bytes = tensor::row_bytes(t.type, ne0);
    if (row_bytes * static_cast<size_t>(rows) != n_bytes) {
      throw Error(ErrorCode::kInternal, "make-model: tensor '" + t.name + "' size mismatch");
    }
    const uint64_t key = splitmix64(seed ^ hash_name(t.name));
    const float sigma = sigma_for(t.role, ne0);
    pool.parallel_for(rows, 16, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(ne0));  // one row of values [ne0]
      for (int64_t r = begin; r < end; ++r) {
        if (t.role == Role::kNorm) {
          std::fill(row.begin(), row.end(), 1.0f);
        } else {
          // Rows are 2^32 counter values apart, far more than any row's length.
          random_row(key + (static_cast<uint64_t>(r) << 32), sigma, row.data(), ne0);
        }
        tensor::quantize_row(t.type, row.data(), dst + static_cast<size_t>(r) * row_bytes, ne0);
      }
    });
  };
}

}  // namespace

SyntheticSummary write_synthetic_model(const std::string& path, const SyntheticOptions& options) {
  const SyntheticShape shape = synthetic_shape(options);  // validates every option
  const ArchSpec& arch = synthetic::find_arch(options.arch);
  const WeightType& wtype = synthetic::find_weight_type(options.weight_type);

  const Metadata vocab = options.vocab_path.empty() ? synthetic::builtin_vocab(shape.n_vocab)
                                                    : synthetic::copied_vocab(options.vocab_path);
  SyntheticSummary summary;
  summary.n_vocab = synthetic::vocab_size(vocab);
  summary.name = "keel random weights (" + options.arch + " " + options.preset + ", " +
                 options.weight_type + ", seed " + std::to_string(options.seed) + ")";

  gguf::GgufWriter writer;
  for (auto& [key, value] : model_metadata(arch, shape, wtype, summary.n_vocab, summary.name)) {
    writer.set(key, std::move(value));
  }
  for (const auto& [key, value] : vocab) writer.set(key, value);

  ThreadPool pool(options.n_threads > 0 ? options.n_threads : ThreadPool::default_threads());
  for (const PlannedTensor& t : plan_tensors(arch, shape, summary.n_vocab, wtype)) {
    writer.add_tensor(t.name, t.type, t.shape, make_fill(t, options.seed, pool));
    ++summary.n_tensors;
    summary.n_params += t.shape[0] * t.rows();
    summary.weight_bytes += tensor::row_bytes(t.type, t.shape[0]) * static_cast<uint64_t>(t.rows());
  }
  writer.write(path);
  return summary;
}

}  // namespace keel::model
