// core/utf8 helpers (owned by the tokenizer module, which needs them most).
#include "core/utf8.h"

#include <gtest/gtest.h>

namespace keel {
namespace {

TEST(Utf8, DecodesEveryLength) {
  for (char32_t cp : {U'A', U'é', U'€', U'🦙', U'\U0010FFFF'}) {
    std::string s;
    append_utf8(s, cp);
    const Utf8Decoded d = decode_utf8(s);
    EXPECT_TRUE(d.valid);
    EXPECT_EQ(d.code_point, cp);
    EXPECT_EQ(d.length, s.size());
    EXPECT_EQ(utf8_char_length(s[0]), s.size());
  }
}

TEST(Utf8, RejectsOverlongSurrogatesAndOutOfRange) {
  for (std::string bad :
       {"\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "\x80"}) {
    EXPECT_FALSE(is_valid_utf8(bad)) << bad.size();
    EXPECT_FALSE(decode_utf8(bad).valid);
  }
  std::string s;
  append_utf8(s, 0xD800);
  EXPECT_EQ(s, "\xEF\xBF\xBD");  // a surrogate cannot be encoded: U+FFFD
}

TEST(Utf8, IncompleteTailCountsOnlyCompletablePrefixes) {
  EXPECT_EQ(utf8_incomplete_tail(""), 0u);
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82\xAC"), 0u);  // complete "€"
  EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\xA6"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("\xE0\x80"), 0u);  // overlong: never completes
  EXPECT_EQ(utf8_incomplete_tail("\xED\xA0"), 0u);  // surrogate: never completes
  EXPECT_EQ(utf8_incomplete_tail("\x82\x82"), 0u);  // no lead byte
}

TEST(Utf8, SanitizeReplacesEachMaximalInvalidSubpart) {
  EXPECT_EQ(sanitize_utf8("ok"), "ok");
  EXPECT_EQ(sanitize_utf8("a\xE2\x82"), "a\xEF\xBF\xBD");  // one subpart
  EXPECT_EQ(sanitize_utf8("\xE2\x82(\x80"), "\xEF\xBF\xBD(\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xF0\x9F\xA6\x99"), "\xF0\x9F\xA6\x99");
  EXPECT_TRUE(is_valid_utf8(sanitize_utf8("\xC3\x28\xA0\xA1\xF8")));
}

}  // namespace
}  // namespace keel
