// JSON mode through the engine (Request::json_object, sampling/json_constraint.h): on the
// fake model with a JSON-capable vocabulary every finished run is one JSON object; the
// output does not depend on what else runs in the batch; a vocabulary that cannot start
// an object fails that request alone.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "fake_backend.h"

namespace keel::engine::test {
namespace {

// Token 0 ends generation, 1 is BOS; the rest build JSON.
std::vector<std::string> json_pieces() {
  return {"", "", "{", "}", "\"", "k", "v", ":", "1", "0", ",", " ", "[", "]", "{\"", "\":", "\"}", "x", "."};
}

Request json_request(uint64_t seed) {
  Request r = make_request({1, 5, 6}, 120, seed, 0.9f);
  r.json_object = true;
  return r;
}

TEST(EngineJsonMode, FinishedRunsAreJsonObjectsWhateverTheBatch) {
  std::vector<Outcome> solo;
  {
    EngineOptions o;
    o.n_parallel = 1;
    Engine engine(std::make_unique<FakeBackend>(json_pieces()), o);
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      RequestHandle h = engine.submit(json_request(seed));
      solo.push_back(collect(h));
    }
  }
  int parsed = 0;
  for (const Outcome& out : solo) {
    ASSERT_NE(out.reason, FinishReason::kError) << out.error;
    if (out.reason != FinishReason::kStop) continue;
    ASSERT_TRUE(nlohmann::json::accept(out.text)) << out.text;
    EXPECT_TRUE(nlohmann::json::parse(out.text).is_object()) << out.text;
    ++parsed;
  }
  EXPECT_GT(parsed, 3);  // the fake model closes objects often enough to check
  // The same requests all at once, beside unconstrained ones: the same outputs.
  EngineOptions o;
  o.n_parallel = 6;
  Engine engine(std::make_unique<FakeBackend>(json_pieces()), o);
  std::vector<RequestHandle> json_handles, other;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    json_handles.push_back(engine.submit(json_request(seed)));
    other.push_back(engine.submit(make_request({1, 7}, 30, seed, 0.9f)));
  }
  for (size_t i = 0; i < json_handles.size(); ++i) {
    const Outcome out = collect(json_handles[i]);
    EXPECT_EQ(out.tokens, solo[i].tokens) << "seed " << i + 1;
    EXPECT_EQ(out.text, solo[i].text);
  }
  for (RequestHandle& h : other) EXPECT_NE(collect(h).reason, FinishReason::kError);
}

TEST(EngineJsonMode, AVocabularyWithoutBracesFailsThatRequestAlone) {
  Engine engine(std::make_unique<FakeBackend>(), EngineOptions{});  // letters and words only
  RequestHandle bad = engine.submit(json_request(1));
  const Outcome out = collect(bad);
  EXPECT_EQ(out.reason, FinishReason::kError);
  EXPECT_NE(out.error.find("masked"), std::string::npos) << out.error;
  RequestHandle good = engine.submit(make_request({1, 5}, 8));
  EXPECT_EQ(collect(good).reason, FinishReason::kLength);
}

}  // namespace
}  // namespace keel::engine::test
