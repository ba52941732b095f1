// Sweep configurations: cross-product order, V following K, explicit lists, bad text.
#include <gtest/gtest.h>

#include "core/error.h"
#include "sweep/sweep_config.h"

namespace keel::sweep {
namespace {

using tensor::DType;

TEST(SweepConfig, CrossProductInFixedOrderWithVFollowingK) {
  SweepAxes axes;
  axes.flash_attention = parse_on_off_list("on,off", "--fa");
  axes.k_types = parse_type_list("f16,q8_0,q4_0", "--ctk");
  axes.contexts = parse_int_list("8192,32k", "-c");
  const std::vector<SweepConfig> rows = expand(axes);
  ASSERT_EQ(rows.size(), 12u);
  EXPECT_EQ(rows[0].label(), "fa=on,ctk=f16,ctv=f16,c=8192,np=1");
  EXPECT_EQ(rows[1].label(), "fa=on,ctk=f16,ctv=f16,c=32768,np=1");
  EXPECT_EQ(rows[2].label(), "fa=on,ctk=q8_0,ctv=q8_0,c=8192,np=1");
  EXPECT_EQ(rows[11].label(), "fa=off,ctk=q4_0,ctv=q4_0,c=32768,np=1");
  for (const SweepConfig& r : rows) EXPECT_EQ(r.k_type, r.v_type) << r.label();
}

TEST(SweepConfig, ExplicitVTypesCrossWithK) {
  SweepAxes axes;
  axes.k_types = {DType::kQ8_0, DType::kQ4_0};
  axes.v_types = {DType::kF16, DType::kQ8_0};
  axes.parallel = {1, 4};
  const std::vector<SweepConfig> rows = expand(axes);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[3].label(), "fa=on,ctk=q8_0,ctv=q8_0,c=4096,np=4");
  EXPECT_EQ(rows[4].label(), "fa=on,ctk=q4_0,ctv=f16,c=4096,np=1");
}

TEST(SweepConfig, ExplicitListTakesDefaultsForMissingKeys) {
  SweepConfig defaults;
  defaults.n_ctx = 512;
  const auto rows = parse_configs("fa=off,ctk=q8_0; ctk=q4_0,ctv=f16,c=1k,np=2;", defaults);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label(), "fa=off,ctk=q8_0,ctv=q8_0,c=512,np=1");
  EXPECT_EQ(rows[1].label(), "fa=on,ctk=q4_0,ctv=f16,c=1024,np=2");
  // A label reads back as the same configuration (the child gets its row this way).
  for (const SweepConfig& r : rows) EXPECT_EQ(parse_configs(r.label(), {}).front(), r);
}

TEST(SweepConfig, BadTextNamesTheProblem) {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { parse_type_list("f16,q9_9", "--ctk"); }).find("q9_9"), std::string::npos);
  EXPECT_NE(message([] { parse_on_off_list("on,maybe", "--fa"); }).find("maybe"), std::string::npos);
  EXPECT_NE(message([] { parse_int_list("8192,-1", "-c"); }).find("-1"), std::string::npos);
  EXPECT_NE(message([] { parse_int_list("8192,,4", "-c"); }).find("empty"), std::string::npos);
  EXPECT_NE(message([] { parse_configs("fa=on,bogus=1", {}); }).find("bogus"), std::string::npos);
  EXPECT_NE(message([] { parse_configs("fa", {}); }).find("key=value"), std::string::npos);
  EXPECT_NE(message([] { parse_configs(";", {}); }).find("no configuration"), std::string::npos);
}

}  // namespace
}  // namespace keel::sweep
