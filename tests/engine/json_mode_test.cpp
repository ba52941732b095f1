// JSON mode through the engine (Request::json_object, sampling/json_constraint.h): on the
// fake model with a JSON-capable vocabulary every finished run is one JSON object; the
// output does not depend on what else runs in the batch; a vocabulary that cannot start
// an object fails that request alone.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
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

// Requests of seeds 1..n, each alone on a one-slot engine.
template <typename MakeRequest>
std::vector<Outcome> run_alone(MakeRequest make, uint64_t n) {
  EngineOptions o;
  o.n_parallel = 1;
  Engine engine(std::make_unique<FakeBackend>(json_pieces()), o);
  std::vector<Outcome> out;
  for (uint64_t seed = 1; seed <= n; ++seed) {
    RequestHandle h = engine.submit(make(seed));
    out.push_back(collect(h));
  }
  return out;
}

TEST(EngineJsonMode, FinishedRunsAreJsonObjectsWhateverTheBatch) {
  const std::vector<Outcome> solo = run_alone(json_request, 12);
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

// A required function call's shape: one of the preludes (the name's rest), then an object.
TEST(EngineJsonMode, PreludesLeadIntoTheObjectWhateverTheBatch) {
  const std::vector<std::string> preludes = {"k\": ", "x\":"};
  auto request = [&](uint64_t seed) {
    Request r = json_request(seed);
    r.json_constraint.preludes = preludes;
    return r;
  };
  const std::vector<Outcome> solo = run_alone(request, 10);
  int parsed = 0;
  for (const Outcome& out : solo) {
    ASSERT_NE(out.reason, FinishReason::kError) << out.error;
    const auto p = std::find_if(preludes.begin(), preludes.end(), [&](const std::string& x) { return out.text.starts_with(x); });
    ASSERT_NE(p, preludes.end()) << out.text;
    if (out.reason != FinishReason::kStop) continue;
    EXPECT_TRUE(nlohmann::json::parse(out.text.substr(p->size())).is_object()) << out.text;
    ++parsed;
  }
  EXPECT_GT(parsed, 2);
  EngineOptions o;
  o.n_parallel = 4;
  Engine engine(std::make_unique<FakeBackend>(json_pieces()), o);
  Request bad = make_request({1, 5}, 10, 1, 0.9f);
  bad.json_constraint.preludes = preludes;  // without json_object: refused at submit
  EXPECT_THROW(engine.submit(std::move(bad)), keel::Error);
  std::vector<RequestHandle> handles;
  for (uint64_t seed = 1; seed <= 10; ++seed) handles.push_back(engine.submit(request(seed)));
  for (size_t i = 0; i < handles.size(); ++i) EXPECT_EQ(collect(handles[i]).tokens, solo[i].tokens) << i;
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
