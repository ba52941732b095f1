#include "kv/layer_groups.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace keel::kv {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "kv cache: " + what);
}

void check_type(tensor::DType type, int64_t head_dim, const char* which) {
  if (!is_cache_type(type)) {
    throw Error(ErrorCode::kUnsupported,
                std::string("kv cache: ") + which + " type " +
                    (tensor::is_known_dtype(static_cast<uint32_t>(type))
                         ? tensor::dtype_name(type)
                         : std::to_string(static_cast<uint32_t>(type))) +
                    " cannot be stored (use f32, f16, bf16, q8_0, q4_0, q4_1, q5_0 or q5_1)");
  }
  const int64_t block = tensor::traits(type).block_size;
  if (head_dim % block != 0) {
    bad(std::string(which) + " type " + tensor::dtype_name(type) + " needs the head dimension (" +
        std::to_string(head_dim) + ") to be a multiple of " + std::to_string(block));
  }
}

// Pages a sliding group needs at most: per sequence the window plus slack (and one page
// of misalignment at each end), plus the positions reserved at once; never more than
// the full pool.
int64_t sliding_pages(const KvOptions& o, int32_t window, int64_t full_pages) {
  const int64_t per_seq = pages_for(int64_t{window} + o.window_slack_tokens, o.page_tokens) + 2;
  const int64_t n = o.max_sequences * per_seq + pages_for(o.max_batch_tokens, o.page_tokens);
  return std::min(n, full_pages);
}

}  // namespace

bool is_cache_type(tensor::DType type) {
  using tensor::DType;
  switch (type) {
    case DType::kF32: case DType::kF16: case DType::kBF16: case DType::kQ8_0:
    case DType::kQ4_0: case DType::kQ4_1: case DType::kQ5_0: case DType::kQ5_1:
      return true;
    default:
      return false;
  }
}

GroupLayout make_group_layout(const KvLayout& layout, const KvOptions& o) {
  if (layout.layer_window.empty()) bad("layout has no layers");
  if (layout.n_kv_heads <= 0 || layout.head_dim_k <= 0 || layout.head_dim_v <= 0) {
    bad("n_kv_heads (" + std::to_string(layout.n_kv_heads) + "), head_dim_k (" +
        std::to_string(layout.head_dim_k) + ") and head_dim_v (" +
        std::to_string(layout.head_dim_v) + ") must be positive");
  }
  if (o.page_tokens <= 0 || o.page_tokens > (1 << 20)) {
    bad("page_tokens " + std::to_string(o.page_tokens) + " out of range [1, 2^20]");
  }
  if (o.max_tokens <= 0 || o.max_tokens > (int64_t{1} << 40)) {
    bad("max_tokens " + std::to_string(o.max_tokens) + " out of range");
  }
  if (o.max_sequences <= 0 || o.max_sequences > (1 << 20)) {
    bad("max_sequences " + std::to_string(o.max_sequences) + " out of range");
  }
  if (o.window_slack_tokens < 0) bad("window_slack_tokens must not be negative");
  if (o.max_batch_tokens <= 0 || o.max_batch_tokens > (int64_t{1} << 40)) {
    bad("max_batch_tokens " + std::to_string(o.max_batch_tokens) + " out of range");
  }
  check_type(o.k_type, layout.head_dim_k, "K");
  check_type(o.v_type, layout.head_dim_v, "V");

  GroupLayout g;
  std::vector<int32_t> windows;
  for (int32_t l = 0; l < layout.n_layers(); ++l) {
    const int32_t w = layout.layer_window[l];
    if (w < 0) bad("layer " + std::to_string(l) + " has a negative window " + std::to_string(w));
    windows.push_back(w);
  }
  std::sort(windows.begin(), windows.end());
  windows.erase(std::unique(windows.begin(), windows.end()), windows.end());

  const size_t k_row = tensor::row_bytes(o.k_type, layout.n_kv_heads * layout.head_dim_k);
  const size_t v_row = tensor::row_bytes(o.v_type, layout.n_kv_heads * layout.head_dim_v);
  const int64_t full_pages = pages_for(o.max_tokens, o.page_tokens) + o.max_sequences;
  g.layer_slot.resize(layout.layer_window.size());
  for (int32_t w : windows) {
    GroupSpec spec;
    spec.window = w;
    for (int32_t l = 0; l < layout.n_layers(); ++l) {
      if (layout.layer_window[l] != w) continue;
      g.layer_slot[l] = {static_cast<int32_t>(g.groups.size()),
                         static_cast<int32_t>(spec.layers.size())};
      spec.layers.push_back(l);
    }
    spec.k_row_bytes = k_row;
    spec.v_row_bytes = v_row;
    spec.layer_bytes = static_cast<size_t>(o.page_tokens) * (k_row + v_row);
    spec.page_bytes = spec.layer_bytes * spec.layers.size();
    spec.pages = w == 0 ? full_pages : sliding_pages(o, w, full_pages);
    g.groups.push_back(std::move(spec));
  }
  return g;
}

}  // namespace keel::kv
