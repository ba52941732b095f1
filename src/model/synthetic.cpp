// Synthetic model generator: architecture tables, presets, built-in vocabulary, and the
// seeded weight stream. See synthetic.h for the contract.
#include "model/synthetic.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "tensor/types.h"

namespace keel::model {
namespace {

using tensor::DType;

// ---- Architecture tables ------------------------------------------------------------

// Symbolic tensor dimensions, resolved against a preset's shape.
enum class Dim { kOne, kEmbd, kFF, kVocab, kQ, kKV, kHeadDim };

// What a tensor is for: decides its initial values and its type in a quantization mix.
enum class Role { kNorm, kEmbedding, kOutput, kAttnQ, kAttnK, kAttnV, kAttnOut, kFfnGate, kFfnUp, kFfnDown };

struct TensorSpec {
  const char* name;  // per-layer names are prefixed with "blk.N."
  Dim ne0;           // input (contiguous) dimension
  Dim ne1;           // kOne for vectors
  Role role;
};

struct ArchSpec {
  const char* name;
  std::vector<TensorSpec> head;   // before the layers
  std::vector<TensorSpec> layer;  // per layer
  std::vector<TensorSpec> tail;   // after the layers
};

const std::vector<ArchSpec>& arch_table() {
  static const std::vector<ArchSpec> table = {
      {"llama",
       {{"token_embd.weight", Dim::kEmbd, Dim::kVocab, Role::kEmbedding}},
       {{"attn_norm.weight", Dim::kEmbd, Dim::kOne, Role::kNorm},
        {"attn_q.weight", Dim::kEmbd, Dim::kQ, Role::kAttnQ},
        {"attn_k.weight", Dim::kEmbd, Dim::kKV, Role::kAttnK},
        {"attn_v.weight", Dim::kEmbd, Dim::kKV, Role::kAttnV},
        {"attn_output.weight", Dim::kQ, Dim::kEmbd, Role::kAttnOut},
        {"ffn_norm.weight", Dim::kEmbd, Dim::kOne, Role::kNorm},
        {"ffn_gate.weight", Dim::kEmbd, Dim::kFF, Role::kFfnGate},
        {"ffn_up.weight", Dim::kEmbd, Dim::kFF, Role::kFfnUp},
        {"ffn_down.weight", Dim::kFF, Dim::kEmbd, Role::kFfnDown}},
       {{"output_norm.weight", Dim::kEmbd, Dim::kOne, Role::kNorm},
        {"output.weight", Dim::kEmbd, Dim::kVocab, Role::kOutput}}},
  };
  return table;
}

struct Shape {
  int64_t n_embd;
  int64_t n_ff;
  int64_t n_layer;
  int64_t n_head;
  int64_t n_head_kv;
  int64_t n_vocab;  // 0 = the vocabulary's own size; else the built-in one is padded to it
  int64_t n_ctx;
  float rope_base;
  float norm_eps;
};

struct Preset {
  const char* arch;
  const char* name;
  Shape shape;
};

// Widths are multiples of 256 so every quantization mix applies without fallbacks.
const std::vector<Preset>& preset_table() {
  static const std::vector<Preset> table = {
      // ~1.3M parameters (5 MB as f32) with the built-in vocabulary.
      {"llama", "tiny", {256, 512, 2, 4, 2, 0, 512, 10000.0f, 1e-5f}},
      // ~20M parameters in the layers: fast enough for an interactive demo server.
      {"llama", "demo", {512, 1536, 6, 8, 4, 0, 2048, 10000.0f, 1e-5f}},
      // TinyLlama-1.1B's shapes.
      {"llama", "1b", {2048, 5632, 22, 32, 4, 32000, 2048, 10000.0f, 1e-5f}},
  };
  return table;
}

const ArchSpec& find_arch(const std::string& name) {
  for (const ArchSpec& a : arch_table()) {
    if (name == a.name) return a;
  }
  throw Error(ErrorCode::kUnsupported, "make-model: unknown architecture '" + name + "'");
}

const Preset& find_preset(const std::string& arch, const std::string& name) {
  for (const Preset& p : preset_table()) {
    if (arch == p.arch && name == p.name) return p;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "make-model: no preset '" + name + "' for architecture '" + arch + "'");
}

// ---- Weight types and the quantization mix ---------------------------------------------

struct WeightType {
  const char* name;
  DType base;         // most matrices
  uint32_t file_type;  // general.file_type (llama.cpp's LLAMA_FTYPE_*)
};

const WeightType kWeightTypes[] = {
    {"f32", DType::kF32, 0}, {"f16", DType::kF16, 1},   {"q8_0", DType::kQ8_0, 7},
    {"q4_0", DType::kQ4_0, 2}, {"q4_k_m", DType::kQ4_K, 15},
};

const WeightType& find_weight_type(const std::string& name) {
  for (const WeightType& w : kWeightTypes) {
    if (name == w.name) return w;
  }
  throw Error(ErrorCode::kInvalidArgument, "make-model: unknown weight type '" + name + "'");
}

// llama.cpp's rule for spending more bits: the first and last eighth of the layers and
// every third one in between.
bool use_more_bits(int64_t layer, int64_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// A type whose blocks fit a row of n elements: llama.cpp's fallbacks for narrow rows.
DType fit_to_row(DType type, int64_t n) {
  if (n % tensor::traits(type).block_size == 0) return type;
  if (type == DType::kQ4_K) return fit_to_row(DType::kQ5_0, n);
  if (type == DType::kQ6_K) return fit_to_row(DType::kQ8_0, n);
  return DType::kF16;
}

DType tensor_type(const WeightType& w, Role role, int64_t layer, int64_t n_layer, int64_t ne0) {
  if (role == Role::kNorm || w.base == DType::kF32) return DType::kF32;
  DType t = w.base;
  if (w.base == DType::kQ4_K) {  // the Q4_K_M mix
    if (role == Role::kOutput) t = DType::kQ6_K;
    if ((role == Role::kAttnV || role == Role::kFfnDown) && use_more_bits(layer, n_layer)) t = DType::kQ6_K;
  } else if (w.base == DType::kQ4_0 && role == Role::kOutput) {
    t = DType::kQ6_K;  // llama.cpp keeps the output matrix at 6 bits in Q4_0 files
  }
  return fit_to_row(t, ne0);
}

// ---- Vocabulary -------------------------------------------------------------------------

using Metadata = std::vector<std::pair<std::string, gguf::Value>>;

// GPT-2's byte alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes
// for U+0100.. in byte order.
std::string byte_symbol(int b) {
  const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  int cp = b;
  if (!printable) {
    int rank = 0;
    for (int c = 0; c < b; ++c) {
      rank += !((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff));
    }
    cp = 0x100 + rank;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

// Byte-level BPE ("gpt2"): 256 byte tokens, a few English merges, <s> and </s>, padded
// with unused tokens to `pad_to` when that is larger.
Metadata builtin_vocab(int64_t pad_to) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_symbol(b));
  const std::string sp = byte_symbol(' ');
  const std::vector<std::pair<std::string, std::string>> merges = {
      {sp, "t"}, {sp, "a"}, {"h", "e"}, {"i", "n"}, {"r", "e"}, {"o", "n"}, {sp + "t", "he"},
      {"e", "r"}, {sp, "s"}, {"a", "t"}, {"e", "n"}, {"o", "u"}, {sp, "w"}, {sp, "o"},
      {"n", "d"}, {sp + "a", "nd"}, {sp, "i"}, {"i", "s"}, {sp + "w", "as"}, {"a", "s"}};
  std::vector<std::string> merge_text;
  for (const auto& [a, b] : merges) {
    merge_text.push_back(a + " " + b);
    tokens.push_back(a + b);
  }
  std::vector<int32_t> types(tokens.size(), 1);  // normal
  const auto bos = static_cast<uint32_t>(tokens.size());
  tokens.push_back("<s>");
  tokens.push_back("</s>");
  types.push_back(3);  // control
  types.push_back(3);
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < pad_to; ++i) {
    tokens.push_back("<unused" + std::to_string(i) + ">");
    types.push_back(5);  // unused
  }
  Metadata m;
  m.emplace_back("tokenizer.ggml.model", gguf::Value::str("gpt2"));
  m.emplace_back("tokenizer.ggml.pre", gguf::Value::str("default"));
  m.emplace_back("tokenizer.ggml.tokens", gguf::Value::array(tokens));
  m.emplace_back("tokenizer.ggml.token_type", gguf::Value::array(types));
  m.emplace_back("tokenizer.ggml.merges", gguf::Value::array(merge_text));
  m.emplace_back("tokenizer.ggml.bos_token_id", gguf::Value::u32(bos));
  m.emplace_back("tokenizer.ggml.eos_token_id", gguf::Value::u32(bos + 1));
  m.emplace_back("tokenizer.ggml.add_bos_token", gguf::Value::boolean(true));
  return m;
}

Metadata copied_vocab(const std::string& path) {
  const gguf::GgufFile f(path);
  Metadata m;
  for (const auto& [key, value] : f.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) m.emplace_back(key, value);
  }
  const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->array_size() == 0) {
    throw Error(ErrorCode::kInvalidArgument, path + ": no tokenizer.ggml.tokens to copy a vocabulary from");
  }
  return m;
}

int64_t vocab_size(const Metadata& m) {
  for (const auto& [key, value] : m) {
    if (key == "tokenizer.ggml.tokens") return static_cast<int64_t>(value.array_size());
  }
  return 0;
}

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
// is peaked rather than uniform.
float sigma_for(Role role, int64_t fan_in) {
  const float base = 1.0f / std::sqrt(static_cast<float>(fan_in));
  switch (role) {
    case Role::kNorm: return 0.0f;
    case Role::kEmbedding: return 1.0f;
    case Role::kOutput: return 4.0f * base;
    default: return base;
  }
}

struct PlannedTensor {
  std::string name;
  Role role;
  DType type;
  int64_t ne0;
  int64_t ne1;  // 1 for vectors
};

int64_t resolve(Dim d, const Shape& s, int64_t n_vocab) {
  const int64_t head_dim = s.n_embd / s.n_head;
  switch (d) {
    case Dim::kOne: return 1;
    case Dim::kEmbd: return s.n_embd;
    case Dim::kFF: return s.n_ff;
    case Dim::kVocab: return n_vocab;
    case Dim::kQ: return s.n_head * head_dim;
    case Dim::kKV: return s.n_head_kv * head_dim;
    case Dim::kHeadDim: return head_dim;
  }
  return 1;
}

std::vector<PlannedTensor> plan_tensors(const ArchSpec& arch, const Shape& s, int64_t n_vocab,
                                        const WeightType& w) {
  std::vector<PlannedTensor> out;
  auto add = [&](const TensorSpec& t, const std::string& name, int64_t layer) {
    const int64_t ne0 = resolve(t.ne0, s, n_vocab);
    const int64_t ne1 = resolve(t.ne1, s, n_vocab);
    out.push_back({name, t.role, tensor_type(w, t.role, layer, s.n_layer, ne0), ne0, ne1});
  };
  for (const TensorSpec& t : arch.head) add(t, t.name, -1);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    for (const TensorSpec& t : arch.layer) add(t, "blk." + std::to_string(il) + "." + t.name, il);
  }
  for (const TensorSpec& t : arch.tail) add(t, t.name, -1);
  return out;
}

Metadata model_metadata(const ArchSpec& arch, const Preset& p, const WeightType& w, int64_t n_vocab,
                        const std::string& name) {
  const Shape& s = p.shape;
  const std::string a = arch.name;
  auto u32 = [](int64_t v) { return gguf::Value::u32(static_cast<uint32_t>(v)); };
  Metadata m;
  m.emplace_back("general.architecture", gguf::Value::str(a));
  m.emplace_back("general.name", gguf::Value::str(name));
  m.emplace_back("general.file_type", gguf::Value::u32(w.file_type));
  if (w.base != DType::kF32 && w.base != DType::kF16) {
    m.emplace_back("general.quantization_version", gguf::Value::u32(2));
  }
  m.emplace_back(a + ".vocab_size", u32(n_vocab));
  m.emplace_back(a + ".context_length", u32(s.n_ctx));
  m.emplace_back(a + ".embedding_length", u32(s.n_embd));
  m.emplace_back(a + ".block_count", u32(s.n_layer));
  m.emplace_back(a + ".feed_forward_length", u32(s.n_ff));
  m.emplace_back(a + ".attention.head_count", u32(s.n_head));
  m.emplace_back(a + ".attention.head_count_kv", u32(s.n_head_kv));
  m.emplace_back(a + ".attention.layer_norm_rms_epsilon", gguf::Value::f32(s.norm_eps));
  m.emplace_back(a + ".rope.freq_base", gguf::Value::f32(s.rope_base));
  m.emplace_back(a + ".rope.dimension_count", u32(s.n_embd / s.n_head));
  return m;
}

// Generates and quantizes a tensor's rows straight into the writer's buffer, in parallel
// over rows. Each row depends only on (seed, name, row), never on the thread that made it.
gguf::GgufWriter::TensorFill make_fill(const PlannedTensor& t, uint64_t seed, ThreadPool& pool) {
  return [t, seed, &pool](uint8_t* dst, size_t n_bytes) {
    const size_t row_bytes = tensor::row_bytes(t.type, t.ne0);
    if (row_bytes * static_cast<size_t>(t.ne1) != n_bytes) {
      throw Error(ErrorCode::kInternal, "make-model: tensor '" + t.name + "' size mismatch");
    }
    const uint64_t key = splitmix64(seed ^ hash_name(t.name));
    const float sigma = sigma_for(t.role, t.ne0);
    pool.parallel_for(t.ne1, 16, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(t.ne0));  // one row of values [ne0]
      for (int64_t r = begin; r < end; ++r) {
        if (t.role == Role::kNorm) {
          std::fill(row.begin(), row.end(), 1.0f);
        } else {
          // Rows are 2^32 counter values apart, far more than any row's length.
          random_row(key + (static_cast<uint64_t>(r) << 32), sigma, row.data(), t.ne0);
        }
        tensor::quantize_row(t.type, row.data(), dst + static_cast<size_t>(r) * row_bytes, t.ne0);
      }
    });
  };
}

}  // namespace

std::vector<std::string> synthetic_arches() {
  std::vector<std::string> out;
  for (const ArchSpec& a : arch_table()) out.emplace_back(a.name);
  return out;
}

std::vector<std::string> synthetic_presets(const std::string& arch) {
  std::vector<std::string> out;
  for (const Preset& p : preset_table()) {
    if (arch == p.arch) out.emplace_back(p.name);
  }
  return out;
}

std::vector<std::string> synthetic_weight_types() {
  std::vector<std::string> out;
  for (const WeightType& w : kWeightTypes) out.emplace_back(w.name);
  return out;
}

SyntheticSummary write_synthetic_model(const std::string& path, const SyntheticOptions& options) {
  const ArchSpec& arch = find_arch(options.arch);
  const Preset& preset = find_preset(options.arch, options.preset);
  const WeightType& wtype = find_weight_type(options.weight_type);

  const Metadata vocab = options.vocab_path.empty() ? builtin_vocab(preset.shape.n_vocab)
                                                    : copied_vocab(options.vocab_path);
  SyntheticSummary summary;
  summary.n_vocab = vocab_size(vocab);
  summary.name = "keel random weights (" + options.arch + " " + options.preset + ", " +
                 options.weight_type + ", seed " + std::to_string(options.seed) + ")";

  gguf::GgufWriter writer;
  for (auto& [key, value] : model_metadata(arch, preset, wtype, summary.n_vocab, summary.name)) {
    writer.set(key, std::move(value));
  }
  for (const auto& [key, value] : vocab) writer.set(key, value);

  ThreadPool pool(options.n_threads > 0 ? options.n_threads : ThreadPool::default_threads());
  for (const PlannedTensor& t : plan_tensors(arch, preset.shape, summary.n_vocab, wtype)) {
    std::vector<int64_t> shape = {t.ne0};
    if (t.role != Role::kNorm) shape.push_back(t.ne1);
    writer.add_tensor(t.name, t.type, shape, make_fill(t, options.seed, pool));
    ++summary.n_tensors;
    summary.n_params += t.ne0 * t.ne1;
    summary.weight_bytes += tensor::row_bytes(t.type, t.ne0) * static_cast<uint64_t>(t.ne1);
  }
  writer.write(path);
  return summary;
}

}  // namespace keel::model
