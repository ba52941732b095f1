// The integer matmul driver: activation quantization, panel scheduling over the thread pool
// and the choice between packed SIMD kernels and the scalar twin.
#include "kernels/qmatmul_driver.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_half.h"
#include "kernels/matmul_path.h"
#include "kernels/repack.h"

namespace keel::kernels {
namespace {

MatmulPath env_path() {
  const char* v = std::getenv("KEEL_MATMUL");
  if (v && !std::strcmp(v, "reference")) return MatmulPath::kReference;
  if (v && !std::strcmp(v, "twin")) return MatmulPath::kTwin;
  return MatmulPath::kAuto;
}

thread_local int t_path = -1;  // -1: the process default

// Activation rows per task on the prefill path: a multiple of the kernels' 4-row tile.
constexpr int64_t kRowChunk = 32;
// Activation rows from which panel pairs pay (q::panel_pair_kernel).
constexpr int64_t kPairMinRows = 4;
// Below this many multiply-adds a product runs inline (waking workers costs more).
constexpr int64_t kMinParallelWork = 1 << 15;

void run_tasks(ThreadPool* pool, int64_t n_tasks, int64_t work, const ThreadPool::RangeFn& fn) {
  if (pool == nullptr || pool->size() <= 1 || n_tasks <= 1 || work < kMinParallelWork) {
    fn(0, n_tasks);
    return;
  }
  // Several chunks per thread so a slower core does not leave the other idle.
  const int64_t grain = std::max<int64_t>(1, n_tasks / (4 * pool->size()));
  pool->parallel_for(n_tasks, grain, fn);
}

}  // namespace

MatmulPath matmul_path() {
  static const MatmulPath process_default = env_path();
  return t_path < 0 ? process_default : static_cast<MatmulPath>(t_path);
}

const char* matmul_path_name(MatmulPath path) {
  switch (path) {
    case MatmulPath::kAuto: return "auto";
    case MatmulPath::kTwin: return "twin";
    case MatmulPath::kReference: return "reference";
  }
  return "?";
}

ScopedMatmulPath::ScopedMatmulPath(MatmulPath path) : saved_(t_path) { t_path = static_cast<int>(path); }
ScopedMatmulPath::~ScopedMatmulPath() { t_path = saved_; }

std::shared_ptr<q::PackCache> make_pack_cache(tensor::DType type) {
  return q::format_for(type) ? std::make_shared<q::PackCache>() : nullptr;
}

void prepare_weights(const WeightMatrix& w) {
  if (w.pack && q::panel_kernel(q::best_isa(), w.type)) w.pack->get(w);
}

bool matmul_fast(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, ThreadPool* pool) {
  const MatmulPath path = matmul_path();
  if (path == MatmulPath::kReference) return false;
  if (path == MatmulPath::kAuto && half_kernel_available(w)) {
    // Same bits as the reference (matmul_half.h), only faster.
    constexpr int64_t kRows = 16;
    run_tasks(pool, (w.n_out + kRows - 1) / kRows, n_rows * w.n_in * w.n_out, [&](int64_t b, int64_t e) {
      matmul_half_range(w, x, n_rows, y, b * kRows, std::min(w.n_out, e * kRows));
    });
    return true;
  }
  const q::Format* fmt = q::format_for(w.type);
  if (!fmt || w.n_in % fmt->block != 0) return false;

  // The caller's buffer; workers reach it through this reference (naming the thread_local
  // inside the lambda would give each worker its own, empty one).
  thread_local q::ActBuffer caller_acts;
  q::ActBuffer& acts = caller_acts;
  const q::ActRows a = acts.prepare(n_rows, w.n_in, fmt->act);
  const int64_t work = n_rows * w.n_in * w.n_out;
  run_tasks(pool, (n_rows + 7) / 8, work / 64, [&](int64_t b, int64_t e) {
    acts.quantize_rows(x, b * 8, std::min(n_rows, e * 8));
  });

  const q::PanelFn fn = path == MatmulPath::kAuto ? q::panel_kernel(q::best_isa(), w.type) : nullptr;
  if (fn && w.pack) {
    const q::PackedMatrix& pm = w.pack->get(w, pool);
    // Prefill takes panels two at a time where a pair kernel exists (each activation load
    // then feeds twice the outputs); decode keeps single panels (finer work split).
    const q::PanelFn pair = n_rows >= kPairMinRows ? q::panel_pair_kernel(q::best_isa(), w.type) : nullptr;
    const int64_t group = pair ? 2 : 1;
    const int64_t n_groups = (pm.n_panels() + group - 1) / group;
    const int64_t n_rc = (n_rows + kRowChunk - 1) / kRowChunk;
    auto n_valid = [&](int64_t p) {
      return static_cast<int>(std::min<int64_t>(q::kPanelRows, w.n_out - p * q::kPanelRows));
    };
    run_tasks(pool, n_groups * n_rc, work, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t p = t / n_rc * group, rc = t % n_rc;
        const int64_t r0 = rc * kRowChunk, r1 = std::min(n_rows, (rc + 1) * kRowChunk);
        float* yp = y + p * q::kPanelRows;
        if (pair && p + 1 < pm.n_panels()) {
          pair(pm.panel(p), pm.n_blocks(), a, r0, r1, yp, w.n_out, n_valid(p + 1));
        } else {
          fn(pm.panel(p), pm.n_blocks(), a, r0, r1, yp, w.n_out, n_valid(p));
        }
      }
    });
    return true;
  }
  run_tasks(pool, w.n_out, work, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      for (int64_t r = 0; r < n_rows; ++r) y[r * w.n_out + o] = q::twin_dot(w.type, w.row(o), a, r);
    }
  });
  return true;
}

}  // namespace keel::kernels
