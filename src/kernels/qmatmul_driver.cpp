// The integer matmul driver: activation quantization, panel scheduling over the thread pool
// and the choice between packed SIMD kernels and the scalar twin.
#include "kernels/qmatmul_driver.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_bf16dot.h"
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
// Activation rows from which a task prefetches the thread's next panels (q::NextPanels). A
// 1-row (decode) product streams at the memory's pace and the hardware prefetcher keeps up
// (software prefetch there cost q8_0 ~10% of kernel time); from 2 rows the arithmetic per
// byte grows and the next panels' read overlaps it (8-row cold products 20-35% faster).
constexpr int64_t kPrefetchMinRows = 2;
// Below this many multiply-adds a product runs inline (waking workers costs more).
constexpr int64_t kMinParallelWork = 1 << 15;

void run_tasks(ThreadPool* pool, int64_t n_tasks, int64_t work, const ThreadPool::RangeFn& fn) {
  if (pool == nullptr || pool->size() <= 1 || n_tasks <= 1 || work < kMinParallelWork) {
    fn(0, n_tasks);
    return;
  }
  // Guided chunks: a quarter of the tasks at first, then shrinking to 1/64, so a slower
  // core does not leave the other idle and neither waits long for the other's last chunk.
  ThreadPool::JobOptions job;
  job.min_grain = std::max<int64_t>(1, n_tasks / 64);
  const int64_t grain = std::max<int64_t>(job.min_grain, n_tasks / (2 * pool->size()));
  pool->parallel_for(n_tasks, grain, fn, job);
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

void prepare_weights(const WeightMatrix& w, const std::shared_ptr<q::PackArena>& arena) {
  if (w.pack && q::panel_kernel(q::best_isa(), w.type)) w.pack->get(w, nullptr, arena);
}

size_t prepared_bytes(const WeightMatrix& w) {
  return w.pack && q::panel_kernel(q::best_isa(), w.type) ? q::PackedMatrix::bytes_for(w) : 0;
}

namespace {

// One matrix's share of an integer product on packed panels: tasks of (panel group, chunk of
// activation rows), group = 2 panels where a pair kernel pays (prefill), else 1 (decode).
struct PanelPlan {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
  const q::PackedMatrix* pm = nullptr;
  q::PanelFn fn = nullptr, pair = nullptr;
  int64_t n_rc = 0, n_tasks = 0;
};

PanelPlan plan_panels(const WeightMatrix& w, float* y, int64_t n_rows, q::PanelFn fn, ThreadPool* pool) {
  PanelPlan plan;
  plan.w = &w;
  plan.y = y;
  plan.pm = &w.pack->get(w, pool);
  plan.fn = fn;
  // Batches of panel_pair_min_rows or more take panels two at a time where a pair kernel
  // exists (each activation load then feeds twice the outputs); 1-row decode keeps single
  // panels (finer work split).
  const q::Isa isa = q::best_isa();
  plan.pair = n_rows >= q::panel_pair_min_rows(isa, w.type) ? q::panel_pair_kernel(isa, w.type) : nullptr;
  const int64_t group = plan.pair ? 2 : 1;
  plan.n_rc = (n_rows + kRowChunk - 1) / kRowChunk;
  plan.n_tasks = (plan.pm->n_panels() + group - 1) / group * plan.n_rc;
  return plan;
}

// The panels task t of `plan` reads: one panel group.
q::NextPanels task_panels(const PanelPlan& plan, int64_t t) {
  const int64_t group = plan.pair ? 2 : 1;
  const int64_t p = t / plan.n_rc * group;
  const int64_t n = std::min(group, plan.pm->n_panels() - p);
  return {plan.pm->panel(p), static_cast<size_t>(n) * plan.pm->panel_bytes()};
}

void run_panel_task(const PanelPlan& plan, const q::ActRows& a, int64_t n_rows, int64_t t, q::NextPanels next) {
  const WeightMatrix& w = *plan.w;
  const q::PackedMatrix& pm = *plan.pm;
  const int64_t group = plan.pair ? 2 : 1;
  const int64_t p = t / plan.n_rc * group, rc = t % plan.n_rc;
  const int64_t r0 = rc * kRowChunk, r1 = std::min(n_rows, (rc + 1) * kRowChunk);
  auto n_valid = [&](int64_t panel) {
    return static_cast<int>(std::min<int64_t>(q::kPanelRows, w.n_out - panel * q::kPanelRows));
  };
  float* yp = plan.y + p * q::kPanelRows;
  if (plan.pair && p + 1 < pm.n_panels()) {
    plan.pair(pm.panel(p), pm.n_blocks(), a, r0, r1, yp, w.n_out, n_valid(p + 1), next);
  } else {
    plan.fn(pm.panel(p), pm.n_blocks(), a, r0, r1, yp, w.n_out, n_valid(p), next);
  }
}

// The tasks of n plans back to back in one pool job (one dispatch; the threads finish
// together once, not once per matrix). Task t of a plan runs the same way whatever else
// shares the job, so one product alone and several of one input give the same bits.
// Each task prefetches the panels of the thread's next task in its range (when they are
// other panels than its own): the pool hands out contiguous ranges, so that is what the
// thread reads next.
void run_plans(const PanelPlan* plans, int n, const q::ActRows& a, int64_t n_rows, int64_t work, ThreadPool* pool) {
  int64_t total = 0;
  for (int i = 0; i < n; ++i) total += plans[i].n_tasks;
  const bool prefetch = n_rows >= kPrefetchMinRows;
  run_tasks(pool, total, work, [&](int64_t b, int64_t e) {
    int i = 0;
    int64_t base = 0;
    for (int64_t t = b; t < e; ++t) {
      while (t >= base + plans[i].n_tasks) base += plans[i++].n_tasks;
      q::NextPanels next;
      if (prefetch && t + 1 < e) {
        const bool same_plan = t + 1 < base + plans[i].n_tasks;
        next = same_plan ? task_panels(plans[i], t + 1 - base) : task_panels(plans[i + 1], 0);
        if (next.data == task_panels(plans[i], t - base).data) next = {};
      }
      run_panel_task(plans[i], a, n_rows, t - base, next);
    }
  });
}

// Quantizes x once for `format` into the caller's buffer (workers reach it by reference:
// naming the thread_local inside a lambda would give each worker its own, empty one). Tasks
// of 8 rows, or of fewer where that leaves a thread idle: 8 decode rows (--parallel 8) were
// one task, about 4% of the step on one thread while the others waited. Each row is
// quantized alone, so the split does not change the bits.
q::ActRows quantize_input(q::ActBuffer& acts, const float* x, int64_t n_rows, int64_t n_in, q::ActFormat format,
                          int64_t work, ThreadPool* pool) {
  const q::ActRows a = acts.prepare(n_rows, n_in, format);
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t rows = std::clamp<int64_t>(n_rows / threads, 1, 8);
  run_tasks(pool, (n_rows + rows - 1) / rows, work / 64, [&](int64_t b, int64_t e) {
    acts.quantize_rows(x, b * rows, std::min(n_rows, e * rows));
  });
  return a;
}

thread_local q::ActBuffer caller_acts;

// BF16 weights on the pair-dot instruction (matmul_bf16dot.h) for n matrices of one input
// (bf16dot_available for each, the same n_in): x rounded once (8 rows a task, into the
// caller's scratch, which workers reach by reference), then every matrix's row tasks as one
// job. The twin path runs the oracle.
void bf16dot_products(const WeightMatrix* const* ws, const float* x, int64_t n_rows, float* const* ys, int n,
                      MatmulPath path, ThreadPool* pool) {
  constexpr int64_t kRows = 48;  // whole tiles of 6 (prefill) and 4 (decode)
  const int64_t n_in = ws[0]->n_in;
  int64_t work = 0, tasks = 0;
  int64_t first_task[kMaxSharedInput + 1];
  for (int i = 0; i < n; ++i) {
    work += n_rows * n_in * ws[i]->n_out;
    first_task[i] = tasks;
    tasks += (ws[i]->n_out + kRows - 1) / kRows;
  }
  first_task[n] = tasks;
  const Bf16Rows xb = bf16dot_rows_buffer(n_rows, n_in);
  run_tasks(pool, (n_rows + 7) / 8, work / 64, [&](int64_t b, int64_t e) {
    bf16dot_round_into(xb, x, n_in, b * 8, std::min(n_rows, e * 8));
  });
  const auto range = path == MatmulPath::kAuto ? bf16dot_range : bf16dot_range_twin;
  run_tasks(pool, tasks, work, [&](int64_t b, int64_t e) {
    int i = 0;
    while (b < e) {
      while (b >= first_task[i + 1]) ++i;
      const WeightMatrix& w = *ws[i];
      const int64_t end = std::min(e, first_task[i + 1]);  // this matrix's part of [b, e)
      const int64_t o0 = (b - first_task[i]) * kRows, o1 = std::min(w.n_out, (end - first_task[i]) * kRows);
      range(w, xb, n_rows, ys[i], o0, o1);
      b = end;
    }
  });
}

}  // namespace

bool matmul_fast(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, ThreadPool* pool) {
  const MatmulPath path = matmul_path();
  if (path == MatmulPath::kReference) return false;
  if (bf16dot_available(w)) {
    const WeightMatrix* ws[1] = {&w};
    float* ys[1] = {y};
    bf16dot_products(ws, x, n_rows, ys, 1, path, pool);
    return true;
  }
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

  q::ActBuffer& acts = caller_acts;
  const int64_t work = n_rows * w.n_in * w.n_out;
  const q::ActRows a = quantize_input(acts, x, n_rows, w.n_in, fmt->act, work, pool);

  const q::PanelFn fn = path == MatmulPath::kAuto ? q::panel_kernel(q::best_isa(), w.type) : nullptr;
  if (fn && w.pack) {
    const PanelPlan plan = plan_panels(w, y, n_rows, fn, pool);
    run_plans(&plan, 1, a, n_rows, work, pool);
    return true;
  }
  run_tasks(pool, w.n_out, work, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      for (int64_t r = 0; r < n_rows; ++r) y[r * w.n_out + o] = q::twin_dot(w.type, w.row(o), a, r);
    }
  });
  return true;
}

bool matmul_fast_shared_input(const WeightMatrix* const* ws, const float* x, int64_t n_rows, float* const* ys,
                              int n, ThreadPool* pool) {
  if (n < 1 || n > kMaxSharedInput || matmul_path() != MatmulPath::kAuto) return false;
  bool all_bf16dot = true;
  for (int i = 0; i < n; ++i) all_bf16dot = all_bf16dot && bf16dot_available(*ws[i]) && ws[i]->n_in == ws[0]->n_in;
  if (all_bf16dot) {
    bf16dot_products(ws, x, n_rows, ys, n, MatmulPath::kAuto, pool);
    return true;
  }
  const q::Format* fmt = q::format_for(ws[0]->type);
  if (!fmt) return false;
  int64_t work = 0;
  for (int i = 0; i < n; ++i) {
    const WeightMatrix& w = *ws[i];
    const q::Format* f = q::format_for(w.type);
    // One quantization serves all only when every matrix reads the same activation format.
    if (!f || f->act != fmt->act || w.n_in != ws[0]->n_in || w.n_in % f->block != 0 || !w.pack ||
        !q::panel_kernel(q::best_isa(), w.type)) {
      return false;
    }
    work += n_rows * w.n_in * w.n_out;
  }
  q::ActBuffer& acts = caller_acts;
  const q::ActRows a = quantize_input(acts, x, n_rows, ws[0]->n_in, fmt->act, work, pool);
  PanelPlan plans[kMaxSharedInput];
  for (int i = 0; i < n; ++i) {
    plans[i] = plan_panels(*ws[i], ys[i], n_rows, q::panel_kernel(q::best_isa(), ws[i]->type), pool);
  }
  run_plans(plans, n, a, n_rows, work, pool);
  return true;
}

}  // namespace keel::kernels
