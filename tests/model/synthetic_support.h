// Helpers for tests of synthetic models (model/synthetic.h): write one into temp_dir(),
// and run a few tokens through it checking what any healthy model must satisfy.
#pragma once

#include <string>
#include <vector>

#include "model/model.h"
#include "model/synthetic.h"

namespace keel::test {

// Writes `o` to temp_dir()/<name>.gguf and returns the path.
std::string write_synthetic(const std::string& name, const model::SyntheticOptions& o);

// Token ids valid in the built-in vocabulary (bytes and merges), n of them.
std::vector<int32_t> synthetic_tokens(int n);

// Runs `tokens` in one batch and token by token (gtest failures unless the two are bitwise
// equal, every logit finite, and every row peaked: the top logit well above the row's
// mean). Returns the one-batch logits [n_tokens][n_vocab].
std::vector<float> expect_healthy_run(const model::Model& m, const std::vector<int32_t>& tokens);

}  // namespace keel::test
