// JSON mode's per-token cost (sampling/json_constraint.h), plain and with a JSON Schema:
// one mask over a real vocabulary (../shared/reference/vocab, run from the repository
// root), in the states a JSON answer spends its tokens in: inside a string, and where a
// value must start.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "sampling/json_constraint.h"
#include "sampling/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace {

std::shared_ptr<const keel::sampling::TokenBytes> vocab_bytes(const std::string& name) {
  const keel::gguf::GgufFile file("../shared/reference/vocab/ggml-vocab-" + name + ".gguf");
  const keel::tokenizer::Tokenizer tok = keel::tokenizer::Tokenizer::from_gguf(file);
  std::vector<std::string> bytes;
  std::vector<uint8_t> end;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    bytes.push_back(tok.token_to_piece(id));
    end.push_back(tok.is_end_of_generation(id) ? 1 : 0);
  }
  return std::make_shared<const keel::sampling::TokenBytes>(std::move(bytes), std::move(end));
}

// args: vocabulary (0 llama-spm, 1 gpt-2), state (0 inside a string, 1 a value must start),
// schema (0 none: JSON mode; 1 an object schema with a string, an integer and an enum).
void BM_JsonMask(benchmark::State& state) {
  static const char* names[] = {"llama-spm", "gpt-2"};
  std::shared_ptr<const keel::sampling::TokenBytes> v;
  try {
    v = vocab_bytes(names[state.range(0)]);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  keel::sampling::JsonConstraintSpec spec;
  if (state.range(2) == 1) {
    spec.schema = keel::sampling::JsonSchema::compile(
        R"({"type": "object", "properties": {"answer": {"type": "string"}, "n": {"type": "integer"},
            "mood": {"enum": ["happy", "sad"]}}, "required": ["answer", "n", "mood"]})");
  }
  keel::sampling::JsonConstraint c(v, spec);
  // Feed a prefix byte by byte through single-byte tokens of the vocabulary.
  const std::string prefix = state.range(1) == 0 ? "{\"answer\": \"The sky is" : "{\"answer\":";
  for (char ch : prefix) {
    for (size_t t = 0; t < v->bytes.size(); ++t) {
      if (v->bytes[t] == std::string(1, ch)) {
        c.accept(static_cast<int32_t>(t));
        break;
      }
    }
  }
  std::vector<float> logits(v->bytes.size());
  for (auto _ : state) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    c.mask(logits);
    benchmark::DoNotOptimize(logits.data());
  }
  state.SetLabel(std::string(names[state.range(0)]) + (state.range(2) ? " schema" : ""));
}
BENCHMARK(BM_JsonMask)->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);

}  // namespace
