// core/fault.h: parsing KEEL_FAULT, site filtering, and the switch through start_engine.
#include "core/fault.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "engine/model_backend.h"
#include "engine_test_util.h"
#include "support/paths.h"

namespace keel::engine::test {
namespace {

TEST(Fault, ParsesTheEnvironmentSyntax) {
  FaultConfig c = parse_fault_config("step:0.01,seed=7");
  EXPECT_EQ(c.site, "step");
  EXPECT_DOUBLE_EQ(c.probability, 0.01);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(parse_fault_config("kernel:1").site, "kernel");
  for (const char* bad : {"", "step", ":0.1", "step:", "step:2", "step:-0.1", "step:x", "step:0.1,seed=",
                          "step:0.1,foo=1", "step:nan"}) {
    EXPECT_THROW(parse_fault_config(bad), Error) << bad;
  }
}

TEST(Fault, FiresOnlyAtMatchingPointsAndOnlyWhenOn) {
  fault_disable();
  EXPECT_NO_THROW(fault_point("kernel"));
  fault_configure({"engine.", 1.0, 1});
  EXPECT_NO_THROW(fault_point("kernel"));
  int64_t before = faults_injected();
  try {
    fault_point("engine.forward");
    ADD_FAILURE() << "did not fire";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_STREQ(e.what(), "injected fault at engine.forward");
  }
  EXPECT_EQ(faults_injected(), before + 1);
  fault_configure({"step", 1.0, 1});  // "step": every point
  EXPECT_THROW(fault_point("kernel"), Error);
  fault_disable();
  EXPECT_NO_THROW(fault_point("engine.forward"));
}

TEST(Fault, KeelFaultEnvironmentTurnsItOnForAServedModel) {
  LoadOptions o;
  o.model_path = keel::test::shared_dir() + "/models/stories260K.gguf";
  o.engine.n_ctx = 64;
  o.engine.threads = 2;  // kernels dispatch to the pool (its fault point) only with workers
  o.mem_limit_bytes = 1ull << 30;
  LoadedModel m = open_model(o);
  ::setenv("KEEL_FAULT", "kernel:1,seed=3", 1);
  std::unique_ptr<Engine> engine;
  try {
    engine = start_engine(m, o);
  } catch (...) {
    ::unsetenv("KEEL_FAULT");
    fault_disable();
    throw;
  }
  ::unsetenv("KEEL_FAULT");
  RequestHandle h = engine->submit(make_request({1, 403, 407, 261, 378}, 4));
  Outcome out = collect(h);
  fault_disable();
  EXPECT_EQ(out.reason, FinishReason::kError);
  EXPECT_NE(out.error.find("injected fault at kernel"), std::string::npos) << out.error;
  // Off again: the same engine serves the request.
  RequestHandle again = engine->submit(make_request({1, 403, 407, 261, 378}, 4));
  EXPECT_EQ(collect(again).reason, FinishReason::kLength);
}

}  // namespace
}  // namespace keel::engine::test
