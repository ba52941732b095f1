#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "sampling/params.h"
#include "sampling/sampler.h"

namespace keel::sampling {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Expects validate() to throw kInvalidArgument with a message naming `field`.
void expect_rejected(const std::function<void(SamplingParams&)>& edit, const std::string& field) {
  SamplingParams p;
  edit(p);
  try {
    p.validate();
    ADD_FAILURE() << "accepted bad " << field;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
  EXPECT_THROW(Sampler{p}, Error) << field;
}

TEST(SamplingParams, DefaultsAndEdgeValuesAreValid) {
  SamplingParams p;
  EXPECT_NO_THROW(p.validate());
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.top_k = 0;
  p.min_p = 0.0f;
  EXPECT_NO_THROW(p.validate());
  p.min_p = 1.0f;
  p.top_k = 1;
  p.top_p = 1e-6f;
  p.typical_p = 1e-6f;
  p.penalty_last_n = -1;
  p.logit_bias = {{0, -kInf}, {5, 1e30f}, {6, -1e30f}};
  EXPECT_NO_THROW(p.validate());
}

TEST(SamplingParams, RejectsOutOfRangeValuesNamingTheField) {
  expect_rejected([](SamplingParams& p) { p.temperature = -0.1f; }, "temperature");
  expect_rejected([](SamplingParams& p) { p.temperature = kNaN; }, "temperature");
  expect_rejected([](SamplingParams& p) { p.temperature = kInf; }, "temperature");
  expect_rejected([](SamplingParams& p) { p.top_k = -1; }, "top_k");
  expect_rejected([](SamplingParams& p) { p.top_p = 0.0f; }, "top_p");
  expect_rejected([](SamplingParams& p) { p.top_p = 1.01f; }, "top_p");
  expect_rejected([](SamplingParams& p) { p.top_p = kNaN; }, "top_p");
  expect_rejected([](SamplingParams& p) { p.min_p = -0.01f; }, "min_p");
  expect_rejected([](SamplingParams& p) { p.min_p = 1.5f; }, "min_p");
  expect_rejected([](SamplingParams& p) { p.min_p = kNaN; }, "min_p");
  expect_rejected([](SamplingParams& p) { p.typical_p = 0.0f; }, "typical_p");
  expect_rejected([](SamplingParams& p) { p.typical_p = kNaN; }, "typical_p");
  expect_rejected([](SamplingParams& p) { p.repeat_penalty = 0.0f; }, "repeat_penalty");
  expect_rejected([](SamplingParams& p) { p.repeat_penalty = kNaN; }, "repeat_penalty");
  expect_rejected([](SamplingParams& p) { p.presence_penalty = kNaN; }, "presence_penalty");
  expect_rejected([](SamplingParams& p) { p.frequency_penalty = -kInf; }, "frequency_penalty");
  expect_rejected([](SamplingParams& p) { p.penalty_last_n = -2; }, "penalty_last_n");
  expect_rejected([](SamplingParams& p) { p.top_logprobs = -1; }, "top_logprobs");
  expect_rejected([](SamplingParams& p) { p.logit_bias = {{3, kNaN}}; }, "logit_bias[3]");
  expect_rejected([](SamplingParams& p) { p.logit_bias = {{3, kInf}}; }, "logit_bias[3]");
  expect_rejected([](SamplingParams& p) { p.logit_bias = {{-4, 1.0f}}; }, "logit_bias[-4]");
}

}  // namespace
}  // namespace keel::sampling
