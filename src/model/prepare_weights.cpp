// Model::prepare_weights — packing at load (model.h has the contract).
#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/matmul_path.h"
#include "kernels/qmatmul.h"
#include "kernels/qmatmul_driver.h"
#include "kernels/repack.h"
#include "model/model.h"
#include "model/weights.h"

namespace keel::model {
namespace {

// embed() looks rows up in the original: its pages must stay.
constexpr const char* kRowLookupTensor = "token_embd.weight";

bool packs(const kernels::WeightMatrix& w) {
  return w.pack && w.data && kernels::q::panel_kernel(kernels::q::best_isa(), w.type) != nullptr;
}

size_t view_bytes(const kernels::WeightMatrix& w) { return w.row_stride * static_cast<size_t>(w.n_out); }

}  // namespace

PrepareStats Model::prepare_weights(ThreadPool& pool) const {
  const auto start = std::chrono::steady_clock::now();
  PrepareStats stats;
  if (kernels::matmul_path() != kernels::MatmulPath::kAuto) return stats;

  // The views to pack, largest first so the last tasks are the short ones.
  std::vector<const WeightBinder::Bound*> todo;
  for (const WeightBinder::Bound& b : binder_->bound()) {
    if (packs(b.w)) todo.push_back(&b);
  }
  std::stable_sort(todo.begin(), todo.end(),
                   [](const auto* a, const auto* b) { return view_bytes(a->w) > view_bytes(b->w); });
  // One arena for all (kernels::q::PackArena): a buffer per matrix would leave each one's
  // tail on 4 KiB pages (3-7% of decode speed on the development VM). A view packed twice
  // (the same cache and data) is counted once.
  size_t arena_bytes = 0;
  std::set<std::pair<const kernels::q::PackCache*, const uint8_t*>> sized;
  for (const WeightBinder::Bound* b : todo) {
    if (sized.insert({b->w.pack.get(), b->w.data}).second) arena_bytes += kernels::prepared_bytes(b->w) + 64;
  }
  const auto arena = std::make_shared<kernels::q::PackArena>(arena_bytes);
  // One matrix per task: packing a matrix is sequential, matrices are independent.
  // Loading is not a forward pass: no injected kernel faults here.
  ThreadPool::JobOptions job;
  job.fault_point = false;
  pool.parallel_for(
      static_cast<int64_t>(todo.size()), 1,
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) kernels::prepare_weights(todo[i]->w, arena);
      },
      job);

  std::set<const kernels::q::PackCache*> caches;  // expert views share one cache
  const MappedFile* mapping = file_->mapping();
  for (const WeightBinder::Bound* b : todo) {
    ++stats.matrices_packed;
    if (caches.insert(b->w.pack.get()).second) stats.packed_bytes += b->w.pack->bytes();
    if (mapping && b->tensor != kRowLookupTensor) {
      stats.released_bytes += mapping->release_pages(b->w.data, view_bytes(b->w));
    }
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace keel::model
