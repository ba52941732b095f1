#include "core/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace keel {
namespace {

std::string depths(const std::string& text) {
  JsonDepth d;
  std::string out;
  for (char c : text) out += static_cast<char>('0' + d.push(c));
  return out;
}

TEST(JsonDepth, CountsBracketsOutsideStringsOnly) {
  EXPECT_EQ(depths(R"({"a":[1]})"), "111112210");
  EXPECT_EQ(depths(R"({"}":"\"]"})"), "11111111110");  // brackets and an escaped quote inside strings
  EXPECT_EQ(depths("]]{"), "001");                       // never below zero
}

}  // namespace
}  // namespace keel
