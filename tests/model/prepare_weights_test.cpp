// Model::prepare_weights: packing at load gives the same logits as packing on first use,
// releases the mapped originals' pages, and a path that reads the released originals (the
// f32 reference) still gives the bits it gives on a model that never released anything.
// WeightBinder: float matrices are copied out of the mapping (byte for byte, once per
// tensor) and read in place when the copies' buffer cannot be committed.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/matmul_path.h"
#include "kernels/qmatmul.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "model/weights.h"
#include "support/sanitizer.h"
#include "synthetic_support.h"

namespace keel::test {
namespace {

std::vector<float> run(const model::Model& m, ThreadPool& pool, const std::vector<int32_t>& tokens) {
  kv::KvOptions o;
  o.max_tokens = 256;
  o.max_sequences = 2;
  o.max_batch_tokens = 64;
  kv::KvCache kv(m.kv_layout(), o);
  const kv::SeqId s = kv.create();
  std::vector<model::BatchEntry> batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], static_cast<int64_t>(i), s, true});
  return m.forward(batch, kv, pool);
}

TEST(PrepareWeights, PacksAtLoadWithTheSameLogitsAndReleasesOriginals) {
  model::SyntheticOptions so;
  so.weight_type = "q4_0";
  const std::string path = write_synthetic("prepare_q4_0", so);
  const std::vector<int32_t> tokens = synthetic_tokens(9);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    model::Model lazy(path), eager(path);
    const model::PrepareStats st = eager.prepare_weights(pool);
    if (kernels::q::panel_kernel(kernels::q::best_isa(), tensor::DType::kQ4_0) == nullptr) {
      EXPECT_EQ(st.matrices_packed, 0);  // nothing to pack on a machine without the kernels
    } else {
      // Every layer's 7 matrices (q, k, v, o, gate, up, down) at least.
      EXPECT_GE(st.matrices_packed, 7 * lazy.hparams().n_layer);
      EXPECT_GT(st.packed_bytes, 0u);
      EXPECT_GT(st.released_bytes, 0u);
    }
    EXPECT_EQ(run(eager, pool, tokens), run(lazy, pool, tokens)) << threads << " threads";
    // The reference path reads the originals: released pages come back from the file.
    kernels::ScopedMatmulPath ref(kernels::MatmulPath::kReference);
    EXPECT_EQ(run(eager, pool, tokens), run(lazy, pool, tokens)) << threads << " threads, reference path";
    // Again is harmless (already packed).
    EXPECT_EQ(eager.prepare_weights(pool).matrices_packed, 0) << "reference path: nothing packs";
  }
}

bool inside(const MappedFile& f, const uint8_t* p) { return p >= f.data() && p < f.data() + f.size(); }

// Float matrices are read from a copy the binder made (on memory that may sit on huge
// pages), byte for byte the file's; a tensor bound twice is copied once; quantized
// matrices stay in the mapping for prepare_weights to pack.
TEST(WeightBinder, CopiesFloatMatricesOutOfTheMapping) {
  for (const char* type : {"f16", "bf16", "f32", "q8_0"}) {
    model::SyntheticOptions so;
    so.weight_type = type;
    const std::string path = write_synthetic(std::string("binder_") + type, so);
    gguf::GgufFile file(path);
    ASSERT_NE(file.mapping(), nullptr);
    const gguf::TensorInfo* t = file.find_tensor("token_embd.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->shape.size(), 2u);
    model::WeightBinder b(file);
    const kernels::WeightMatrix w = b.matrix("token_embd.weight", t->shape[0], t->shape[1]);
    const bool is_float = std::string(type) != "q8_0";
    EXPECT_EQ(inside(*file.mapping(), w.data), !is_float) << type;
    EXPECT_EQ(std::memcmp(w.data, t->data, t->n_bytes), 0) << type;
    EXPECT_EQ(b.resident_bytes() >= t->n_bytes, is_float) << type;
    const uint64_t once = b.resident_bytes();
    EXPECT_EQ(b.matrix("token_embd.weight", t->shape[0], t->shape[1]).data, w.data) << type;
    EXPECT_EQ(b.resident_bytes(), once) << type << ": a tensor bound twice is copied once";
  }
}

// Address space in use now (VmSize of /proc/self/status), in bytes; 0 when unknown.
size_t address_space_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmSize:") {
      size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

// In a death test's child: caps the address space just above what is in use, binds the f16
// embedding, and exits 0 when it points into the mapping with nothing copied.
[[noreturn]] void bind_with_no_room_for_copies(const std::string& path) {
  gguf::GgufFile file(path);
  const gguf::TensorInfo* t = file.find_tensor("token_embd.weight");
  const rlim_t cap = address_space_bytes() + (rlim_t{1} << 20);
  rlimit limit{};
  limit.rlim_cur = cap;
  limit.rlim_max = cap;
  if (!t || setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(2);
  model::WeightBinder b(file);
  const kernels::WeightMatrix w = b.matrix("token_embd.weight", t->shape[0], t->shape[1]);
  std::_Exit(w.data == t->data && b.resident_bytes() == 0 ? 0 : 1);
}

// Where the copies' buffer cannot be had, float matrices are read from the mapping: in a
// child process whose address space is capped just above what it uses, binding an f16
// matrix still succeeds and points into the mapping.
TEST(WeightBinderDeathTest, FallsBackToTheMappingWithoutMemoryForCopies) {
#if defined(KEEL_TEST_ASAN)
  GTEST_SKIP() << "the sanitizer reserves address space of its own";
#else
  model::SyntheticOptions so;
  so.weight_type = "f16";
  const std::string path = write_synthetic("binder_no_memory_f16", so);
  if (address_space_bytes() == 0) GTEST_SKIP() << "no /proc/self/status";
  EXPECT_EXIT(bind_with_no_room_for_copies(path), ::testing::ExitedWithCode(0), "");
#endif
}

}  // namespace
}  // namespace keel::test
