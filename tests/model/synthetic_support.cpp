#include "synthetic_support.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "golden_support.h"
#include "support/paths.h"

namespace keel::test {

std::string write_synthetic(const std::string& name, const model::SyntheticOptions& o) {
  const std::string path = temp_dir() + "/" + name + ".gguf";
  model::write_synthetic_model(path, o);
  return path;
}

std::vector<int32_t> synthetic_tokens(int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 37 + 11) % 276));
  return ids;
}

std::vector<float> expect_healthy_run(const model::Model& m, const std::vector<int32_t>& tokens) {
  ThreadPool pool(2);
  RunOptions one_batch;
  RunOptions token_by_token;
  token_by_token.chunk = 1;
  const std::vector<float> a = run_logits(m, tokens, pool, one_batch);
  const std::vector<float> b = run_logits(m, tokens, pool, token_by_token);
  EXPECT_TRUE(bitwise_equal(a, b)) << m.hparams().arch << ": one batch differs from token by token";
  const int64_t n_vocab = m.n_vocab();
  EXPECT_EQ(a.size(), tokens.size() * static_cast<size_t>(n_vocab));
  for (size_t row = 0; row * n_vocab < a.size(); ++row) {
    const float* x = a.data() + row * n_vocab;
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) {
      if (!std::isfinite(x[i])) {
        ADD_FAILURE() << m.hparams().arch << ": logit " << i << " of row " << row << " is " << x[i];
        return a;
      }
      sum += x[i];
    }
    const double top = *std::max_element(x, x + n_vocab);
    EXPECT_GT(top - sum / static_cast<double>(n_vocab), 3.0) << m.hparams().arch << " row " << row;
  }
  return a;
}

}  // namespace keel::test
