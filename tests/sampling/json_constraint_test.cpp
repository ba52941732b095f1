// JSON mode (sampling/json_prefix.h, sampling/json_constraint.h): the prefix checker against
// nlohmann::json's parser as the oracle on hand-picked and random texts, split at every
// byte; the token mask on a toy vocabulary; and sampling under the constraint always
// ending in a JSON object that parses.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <random>
#include <set>
#include <regex>
#include <string>
#include <vector>

#include "core/error.h"
#include "mask_oracle.h"
#include "sampling/json_constraint.h"
#include "sampling/json_prefix.h"
#include "sampling/sampler.h"

namespace keel::sampling {
namespace {

// Feeds `text` one byte at a time; returns how many bytes were accepted.
size_t accepted_bytes(JsonPrefix p, const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!p.feed_byte(static_cast<uint8_t>(text[i]))) return i;
  }
  return text.size();
}

bool accepts_whole(const std::string& text, bool object_only = true) {
  JsonPrefix p(JsonPrefix::Options{.object_only = object_only});
  return p.feed(text) && p.complete();
}

// The oracle: a complete JSON text (whose top level is an object, when asked).
bool oracle(const std::string& text, bool object_only = true) {
  if (!nlohmann::json::accept(text)) return false;
  if (!object_only) return true;
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

TEST(JsonPrefix, AcceptsValidObjectsAtEveryByteAndCompletesAtTheEnd) {
  const std::vector<std::string> docs = {
      "{}", " { } ", "{\"a\":1}", "{\"a\": [1, 2.5, -3e-7, 0, -0.0E+2, true, false, null]}",
      "{\"s\": \"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u00e9\\uD83D\\uDE00\"}", "{\"nested\": {\"x\": [[], {}, [{}]]}}",
      "{\"utf8\": \"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x99\x82 \xE4\xB8\x96\"}", "{\"k\":{\"k\":{\"k\":\"v\"}}}\n",
  };
  for (const std::string& d : docs) {
    ASSERT_TRUE(oracle(d)) << d;
    JsonPrefix p;
    for (size_t i = 0; i < d.size(); ++i) {
      // A proper prefix of an object is never complete until its last '}' (then only ws).
      ASSERT_TRUE(p.feed_byte(static_cast<uint8_t>(d[i]))) << d << " at byte " << i;
    }
    EXPECT_TRUE(p.complete()) << d;
  }
}

TEST(JsonPrefix, RejectsAtTheFirstImpossibleByte) {
  struct Case {
    std::string text;
    size_t accepted;  // bytes accepted before the rejection
  };
  const std::vector<Case> cases = {
      {"[1]", 0},                 // object_only: the top level must be an object
      {"\"s\"", 0},
      {"{a", 1},                  // keys are strings
      {"{\"a\" 1", 5},            // missing colon
      {"{\"a\":01", 6},           // leading zero
      {"{\"a\":1.}", 7},          // a digit must follow '.'
      {"{\"a\":1e}", 7},
      {"{\"a\":-}", 6},
      {"{\"a\":+1", 5},
      {"{\"a\":tru}", 8},
      {"{\"a\":nul l", 8},
      {"{\"a\":1,}", 7},          // trailing comma
      {"{\"a\":[1,]", 8},
      {"{\"a\":[1}", 7},          // wrong close
      {"{\"a\":\"\x01\"}", 6},    // raw control character
      {"{\"a\":\"\\x\"}", 7},     // unknown escape
      {"{\"a\":\"\\u12g4\"}", 10},
      {"{\"a\":\"\xC0\xAF\"}", 6},          // overlong
      {"{\"a\":\"\xED\xA0\x80\"}", 7},      // a surrogate in UTF-8
      {"{\"a\":\"\xF4\x90\x80\x80\"}", 7},  // past U+10FFFF
      {"{\"a\":\"\xE2\x82\"}", 8},          // truncated sequence
      {"{} x", 3},                // nothing but whitespace after the value
      {"{}{}", 2},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(accepted_bytes(JsonPrefix(), c.text), c.accepted) << c.text;
    EXPECT_FALSE(oracle(c.text)) << c.text;
  }
}

TEST(JsonPrefix, LimitsDepthAndWhitespaceRuns) {
  std::string deep = "{\"a\":";
  for (int i = 0; i < JsonPrefix::kMaxDepth - 1; ++i) deep += "[";
  EXPECT_EQ(accepted_bytes(JsonPrefix(), deep), deep.size());
  EXPECT_EQ(accepted_bytes(JsonPrefix(), deep + "["), deep.size());
  const std::string indent(JsonPrefix::kMaxIndent, ' ');
  EXPECT_TRUE(accepts_whole("{\n" + indent + "\"a\": [\r\n" + indent + "1\n]\n}\n"));
  EXPECT_TRUE(accepts_whole("{\t\"a\" :\t1 }"));
  EXPECT_FALSE(accepts_whole("{" + indent + " }"));
  EXPECT_FALSE(accepts_whole("{\n\n}"));
  EXPECT_FALSE(accepts_whole("{\n\r}"));
  EXPECT_FALSE(accepts_whole("{\"a\":1 \n\n}"));
  EXPECT_FALSE(accepts_whole("\n\n{}"));
  EXPECT_TRUE(accepts_whole("{\"" + indent + indent + "\":1}"));  // inside strings: any
}

TEST(JsonPrefix, TopLevelScalarsWhenNotObjectOnly) {
  EXPECT_TRUE(accepts_whole("[1, 2]", false));
  EXPECT_TRUE(accepts_whole("\"x\"", false));
  EXPECT_TRUE(accepts_whole("true", false));
  EXPECT_FALSE(accepts_whole("12", false));  // a number's end is only known from what follows
  EXPECT_TRUE(accepts_whole("12 ", false));
}

// Random texts over JSON's alphabet: whole-text verdicts equal the parser's, and a text the
// parser accepts is accepted byte by byte (so every prefix of it is a valid prefix).
TEST(JsonPrefix, AgreesWithTheParserOnRandomTexts) {
  std::mt19937 rng(17);
  const std::string alphabet = "{}[]:,\"\\ 0123456789-+.eEtrufalsn\x01\xC3\xA9\xE2\x82";
  const std::vector<std::string> atoms = {"{", "}", "[", "]", ":", ",", "\"k\"", "\"v\\n\"", "1", "-2.5e3",
                                          "true", "null", " ", "\"\xC3\xA9\"", "0", "{\"a\":"};
  const std::regex big_exponent("[eE][+-]?[0-9]{3}");
  int valid = 0;
  for (int n = 0; n < 20000; ++n) {
    std::string t;
    const int len = static_cast<int>(rng() % 12) + 1;
    for (int i = 0; i < len; ++i) {
      if (rng() % 3 == 0) {
        t += alphabet[rng() % alphabet.size()];
      } else {
        t += atoms[rng() % atoms.size()];
      }
    }
    // nlohmann rejects numbers outside double's range, which JSON's grammar allows.
    if (std::regex_search(t, big_exponent)) continue;
    for (bool object_only : {true, false}) {
      const bool want = oracle(t, object_only);
      // Scalars at the top level complete only with a delimiter after them (see above).
      const std::string probe = object_only ? t : t + " ";
      ASSERT_EQ(accepts_whole(probe, object_only), want || (!object_only && oracle(probe, false)))
          << "text [" << t << "] object_only " << object_only;
      valid += want;
    }
  }
  EXPECT_GT(valid, 200);  // the generator reaches valid documents often enough to matter
}

// A toy vocabulary: single characters (enough to finish any prefix, as a real vocabulary's
// byte pieces do), some multi-character pieces, an empty control token and an end token.
std::shared_ptr<const TokenBytes> toy_vocab() {
  std::vector<std::string> bytes;
  std::vector<uint8_t> end;
  for (const char* p : {"{", "}", "[", "]", ":", ",", "\"", "a", "b", " ", "1", "0", ".", "-", "e", "true", "null",
                        "\":", "\"}", "},", "{\"", "\\", "n", "\n", "x", "u", "l", "r", "t", "f", "s", "E", "+", "",
                        "\\n", "\xC3\xA9", "\xC3", "\xA9", " a", " {", " \"", " 1", "  "}) {
    bytes.emplace_back(p);
    end.push_back(0);
  }
  bytes.emplace_back("");
  end.push_back(1);  // the end-of-generation token
  return std::make_shared<const TokenBytes>(std::move(bytes), std::move(end));
}

int32_t id_of(const TokenBytes& v, const std::string& piece) {
  for (size_t i = 0; i < v.bytes.size(); ++i) {
    if (!v.end[i] && v.bytes[i] == piece) return static_cast<int32_t>(i);
  }
  return -1;
}

TEST(JsonConstraint, MasksWhatCannotContinueAndEndsOnlyWhenClosed) {
  auto v = toy_vocab();
  JsonConstraint c(v);
  const auto allowed = [&](const JsonConstraint& jc) {
    std::vector<float> logits(v->bytes.size(), 0.0f);
    jc.mask(logits);
    std::vector<std::string> out;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (!std::isinf(logits[i])) out.push_back(v->end[i] ? "<end>" : v->bytes[i]);
    }
    return out;
  };
  EXPECT_EQ(allowed(c), (std::vector<std::string>{"{", " ", "{\"", "\n", " {", "  "}));
  c.accept(id_of(*v, "{\""));
  c.accept(id_of(*v, "a"));
  // Inside a key: anything but a raw newline, and no '"}' (a key needs its ':').
  EXPECT_EQ(allowed(c), (std::vector<std::string>{"{", "}", "[", "]", ":", ",", "\"", "a", "b", " ", "1", "0", ".", "-",
                                                 "e", "true", "null", "\":", "},", "{\"", "\\", "n", "x", "u", "l",
                                                 "r", "t", "f", "s", "E", "+", "\\n", "\xC3\xA9", "\xC3", " a", " {",
                                                 " \"", " 1", "  "}));
  // Between the bytes of a character only its continuation may come.
  c.accept(id_of(*v, "\xC3"));
  EXPECT_EQ(allowed(c), (std::vector<std::string>{"\xA9"}));
  c.accept(id_of(*v, "\xA9"));
  c.accept(id_of(*v, "\":"));
  c.accept(id_of(*v, "1"));
  c.accept(id_of(*v, "}"));
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(allowed(c), (std::vector<std::string>{"<end>"}));
  // Masked tokens stay masked; the row must match the vocabulary.
  std::vector<float> wrong(3, 0.0f);
  EXPECT_THROW(c.mask(wrong), Error);
  EXPECT_THROW(c.accept(999), Error);
}

// The string-safe shortcut changes nothing: along random walks the mask equals probing
// every token's bytes on a copy of the state the test keeps itself.
TEST(JsonConstraint, MaskEqualsProbingEveryToken) {
  auto v = toy_vocab();
  EXPECT_TRUE(v->string_safe[static_cast<size_t>(id_of(*v, "a"))]);
  EXPECT_TRUE(v->string_safe[static_cast<size_t>(id_of(*v, "\\n"))]);
  EXPECT_TRUE(v->string_safe[static_cast<size_t>(id_of(*v, "\xC3\xA9"))]);
  EXPECT_FALSE(v->string_safe[static_cast<size_t>(id_of(*v, "\xC3"))]);    // leaves a character open
  EXPECT_FALSE(v->string_safe[static_cast<size_t>(id_of(*v, "\"}"))]);    // leaves the string
  EXPECT_FALSE(v->string_safe[static_cast<size_t>(id_of(*v, "\\"))]);    // leaves an escape open
  EXPECT_FALSE(v->string_safe[static_cast<size_t>(id_of(*v, "\n"))]);     // raw control character
  std::mt19937 rng(23);
  int checked = 0;
  for (int walk = 0; walk < 200; ++walk) {
    JsonConstraint c(v);
    JsonPrefix mine;
    for (int step = 0; step < 60; ++step) {
      const std::vector<bool> want = oracle_allowed(*v, mine);
      const int64_t diff = first_difference(mask_allowed(c, v->bytes.size()), want);
      ASSERT_EQ(diff, -1) << "walk " << walk << " step " << step << " token [" << v->bytes[static_cast<size_t>(diff)] << "]";
      checked += static_cast<int>(want.size());
      const std::vector<int32_t> allowed = allowed_ids(want);
      ASSERT_FALSE(allowed.empty());
      const int32_t t = allowed[rng() % allowed.size()];
      if (v->end[static_cast<size_t>(t)]) break;
      c.accept(t);
      ASSERT_TRUE(mine.feed(v->bytes[static_cast<size_t>(t)]));
    }
  }
  EXPECT_GT(checked, 100000);
}

// Sampling with random logits under the constraint: every run ends with the end token in
// a text that parses as an object (the constraint never leaves the sampler without a
// candidate), whatever the seed.
TEST(JsonConstraint, SampledTextsAlwaysParse) {
  auto v = toy_vocab();
  const int32_t end = static_cast<int32_t>(v->bytes.size()) - 1;
  int ended = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SamplingParams params;
    params.seed = seed;
    params.temperature = 1.0f;
    Sampler sampler(params);
    JsonConstraint c(v);
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::normal_distribution<float> nd(0.0f, 2.0f);
    std::string text;
    std::vector<float> logits(v->bytes.size());
    bool done = false;
    for (int step = 0; step < 400 && !done; ++step) {
      for (auto& l : logits) l = nd(rng);
      logits[static_cast<size_t>(id_of(*v, "}"))] += 1.5f;  // so most runs close in time
      const int32_t t = sampler.sample(logits, &c).token;
      sampler.accept(t);
      if (t == end) {
        done = true;
      } else {
        c.accept(t);
        text += v->bytes[static_cast<size_t>(t)];
      }
    }
    if (!done) continue;
    ++ended;
    EXPECT_TRUE(nlohmann::json::accept(text)) << "seed " << seed << ": " << text;
    EXPECT_TRUE(nlohmann::json::parse(text).is_object()) << text;
  }
  EXPECT_GT(ended, 150);
}

// With preludes the text is exactly one prelude, then an object: along random walks the
// mask equals an oracle that checks every candidate text against each prelude in turn.
TEST(JsonConstraint, PreludeThenObjectMatchesTheOracle) {
  auto v = toy_vocab();
  const std::vector<std::string> preludes = {"ab\": ", "b\":", "aa"};
  EXPECT_THROW(JsonConstraint(v, {nullptr, {"ab", "abc"}, {}}), Error);  // not prefix-free
  EXPECT_THROW(JsonConstraint(v, {nullptr, {""}, {}}), Error);
  enum class Verdict { kNo, kPrefix, kComplete };
  const auto judge = [&](const std::string& text) {
    for (const std::string& p : preludes) {
      if (text.size() <= p.size()) {
        if (p.starts_with(text)) return Verdict::kPrefix;
        continue;
      }
      if (!text.starts_with(p)) continue;
      JsonPrefix j;
      if (!j.feed(std::string_view(text).substr(p.size()))) return Verdict::kNo;
      return j.complete() ? Verdict::kComplete : Verdict::kPrefix;
    }
    return Verdict::kNo;
  };
  std::mt19937 rng(5);
  int completed = 0;
  std::set<std::string> chosen;
  for (int walk = 0; walk < 300; ++walk) {
    JsonConstraint c(v, {nullptr, preludes, {}});
    std::string text;
    for (int step = 0; step < 40; ++step) {
      std::vector<float> logits(v->bytes.size(), 0.0f);
      c.mask(logits);
      std::vector<int32_t> allowed;
      const Verdict now = judge(text);
      for (size_t t = 0; t < v->bytes.size(); ++t) {
        bool want;
        if (v->end[t]) {
          want = now == Verdict::kComplete;
        } else if (now == Verdict::kComplete || v->bytes[t].empty()) {
          want = false;
        } else {
          want = judge(text + v->bytes[t]) != Verdict::kNo;
        }
        ASSERT_EQ(!std::isinf(logits[t]), want) << "walk " << walk << " text [" << text << "] token [" << v->bytes[t] << "]";
        if (want) allowed.push_back(static_cast<int32_t>(t));
      }
      ASSERT_FALSE(allowed.empty()) << text;
      // Lean on '}' once inside the object, so walks also finish.
      int32_t t = allowed[rng() % allowed.size()];
      const int32_t close = id_of(*v, "}");
      if (std::find(allowed.begin(), allowed.end(), close) != allowed.end() && rng() % 2) t = close;
      if (v->end[static_cast<size_t>(t)]) {
        ++completed;
        for (const std::string& p : preludes) {
          if (text.starts_with(p)) chosen.insert(p);
        }
        EXPECT_TRUE(c.complete());
        break;
      }
      c.accept(t);
      text += v->bytes[static_cast<size_t>(t)];
    }
  }
  EXPECT_GT(completed, 50);
  EXPECT_EQ(chosen.size(), 3u);  // every prelude is reachable
}

}  // namespace
}  // namespace keel::sampling
