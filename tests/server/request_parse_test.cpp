// OpenAI request parsing: a corpus of bad requests, each with its 400, the parameter it
// names and a fragment of its message; and the good forms mapping to engine parameters.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace keel::server {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.n_vocab = 512;
  return l;
}

CompletionRequest chat(const std::string& body) { return parse_chat_request(parse_body(body), limits()); }
CompletionRequest completion(const std::string& body) { return parse_completion_request(parse_body(body), limits()); }

struct BadCase {
  Endpoint endpoint;
  std::string body;
  std::string param;    // "" when the body as a whole is wrong
  std::string message;  // fragment the message must contain
};

const std::string kMsgs = R"("messages":[{"role":"user","content":"hi"}])";

// `item` n times, comma-separated.
std::string repeated(const std::string& item, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + item;
  return s;
}

std::vector<BadCase> bad_cases() {
  const Endpoint C = Endpoint::kChat, P = Endpoint::kCompletion;
  return {
      {C, "", "", "not valid JSON"},
      {C, "{", "", "not valid JSON"},
      {C, "[1,2]", "", "must be a JSON object"},
      {C, "\"text\"", "", "must be a JSON object"},
      {C, "{\"messages\": \"\xff\"}", "", "not valid UTF-8"},
      {C, "{\"messages\": \"\xed\xa0\x80\"}", "", "not valid UTF-8"},  // encoded surrogate
      {C, R"({"messages": "\ud800"})", "", "not valid JSON"},          // lone surrogate escape
      {C, "{}", "messages", "required"},
      {C, R"({"messages": {}})", "messages", "must be an array"},
      {C, R"({"messages": []})", "messages", "must not be empty"},
      {C, R"({"messages": [5]})", "messages[0]", "must be an object"},
      {C, R"({"messages": [{"content": "x"}]})", "messages[0].role", "required"},
      {C, R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role", "must be one of"},
      {C, R"({"messages": [{"role": "user", "content": 7}]})", "messages[0].content", "string or an array"},
      {C, R"({"messages": [{"role": "user"}]})", "messages[0].content", "required"},
      {C, R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content", "not supported"},
      {C, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "messages[0].content", "'text'"},
      {C, "{" + kMsgs + R"(, "temperature": "hot"})", "temperature", "must be a number"},
      {C, "{" + kMsgs + R"(, "temperature": 2.5})", "temperature", "[0, 2]"},
      {C, "{" + kMsgs + R"(, "temperature": -0.1})", "temperature", "[0, 2]"},
      {C, "{" + kMsgs + R"(, "top_p": 0})", "top_p", "(0, 1]"},
      {C, "{" + kMsgs + R"(, "top_p": 1.5})", "top_p", "[0, 1]"},
      {C, "{" + kMsgs + R"(, "top_k": -1})", "top_k", "integer"},
      {C, "{" + kMsgs + R"(, "top_k": 1.5})", "top_k", "integer"},
      {C, "{" + kMsgs + R"(, "min_p": 2})", "min_p", "[0, 1]"},
      {C, "{" + kMsgs + R"(, "max_tokens": 0})", "max_tokens", "integer in [1,"},
      {C, "{" + kMsgs + R"(, "max_tokens": "10"})", "max_tokens", "integer"},
      {C, "{" + kMsgs + R"(, "max_tokens": 1e300})", "max_tokens", "integer"},
      {C, "{" + kMsgs + R"(, "max_completion_tokens": -5})", "max_completion_tokens", "integer"},
      {C, "{" + kMsgs + R"(, "presence_penalty": 3})", "presence_penalty", "[-2, 2]"},
      {C, "{" + kMsgs + R"(, "frequency_penalty": -2.5})", "frequency_penalty", "[-2, 2]"},
      {C, "{" + kMsgs + R"(, "seed": "abc"})", "seed", "integer"},
      {C, "{" + kMsgs + R"(, "seed": 1.5})", "seed", "integer"},
      {C, "{" + kMsgs + R"(, "stop": 5})", "stop", "string or an array"},
      {C, "{" + kMsgs + R"(, "stop": ["a", 5]})", "stop", "string or an array"},
      {C, "{" + kMsgs + R"(, "stop": [""]})", "stop", "must not be empty"},
      {C, "{" + kMsgs + R"(, "stop": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]})",
       "stop", "at most 16"},
      {C, "{" + kMsgs + R"(, "logit_bias": []})", "logit_bias", "must be an object"},
      {C, "{" + kMsgs + R"(, "logit_bias": {"abc": 1}})", "logit_bias", "token ids"},
      {C, "{" + kMsgs + R"(, "logit_bias": {"12x": 1}})", "logit_bias", "token ids"},
      {C, "{" + kMsgs + R"(, "logit_bias": {"9999": 1}})", "logit_bias", "outside the vocabulary"},
      {C, "{" + kMsgs + R"(, "logit_bias": {"-1": 1}})", "logit_bias", "outside the vocabulary"},
      {C, "{" + kMsgs + R"(, "logit_bias": {"5": 101}})", "logit_bias", "[-100, 100]"},
      {C, "{" + kMsgs + R"(, "logit_bias": {"5": "x"}})", "logit_bias", "[-100, 100]"},
      {C, "{" + kMsgs + R"(, "logprobs": 1})", "logprobs", "must be a boolean"},
      {C, "{" + kMsgs + R"(, "top_logprobs": 3})", "top_logprobs", "requires 'logprobs'"},
      {C, "{" + kMsgs + R"(, "logprobs": true, "top_logprobs": 21})", "top_logprobs", "[0, 20]"},
      {C, "{" + kMsgs + R"(, "n": 17})", "n", "integer in [1, 16]"},
      {C, "{" + kMsgs + R"(, "n": 0})", "n", "integer in [1,"},
      {C, "{" + kMsgs + R"(, "stream": "yes"})", "stream", "must be a boolean"},
      {C, "{" + kMsgs + R"(, "stream_options": {"include_usage": true}})", "stream_options", "only allowed when"},
      {C, "{" + kMsgs + R"(, "stream": true, "stream_options": 1})", "stream_options", "must be an object"},
      {C, "{" + kMsgs + R"(, "stream": true, "stream_options": {"include_usage": "y"}})", "include_usage", "boolean"},
      {C, "{" + kMsgs + R"(, "model": 5})", "model", "must be a string"},
      {C, "{" + kMsgs + R"(, "user": []})", "user", "must be a string"},
      {C, "{" + kMsgs + R"(, "tools": [{"type": "function"}]})", "tools[0].function", "must be an object"},
      {C, "{" + kMsgs + R"(, "tools": {}})", "tools", "must be an array"},
      {C, "{" + kMsgs + R"(, "tools": [{"type": "retrieval", "function": {"name": "f"}}]})", "tools[0].type", "function"},
      {C, "{" + kMsgs + R"(, "tools": [{"type": "function", "function": {"name": "a b"}}]})", "tools[0].function.name",
       "1-64 letters"},
      {C, "{" + kMsgs + R"(, "tools": [{"type": "function", "function": {}}]})", "tools[0].function.name", "required"},
      {C, "{" + kMsgs + R"(, "tools": [{"function": {"name": "f"}}, {"function": {"name": "f"}}]})",
       "tools[1].function.name", "listed twice"},
      {C, "{" + kMsgs + R"(, "tools": [{"function": {"name": "f", "parameters": []}}]})",
       "tools[0].function.parameters", "JSON Schema object"},
      {C, "{" + kMsgs + R"(, "tools": [{"function": {"name": "f"}}], "tool_choice": "maybe"})", "tool_choice",
       "none, auto, required"},
      {C, "{" + kMsgs + R"(, "tools": [{"function": {"name": "f"}}], "tool_choice": {"function": {"name": "g"}}})",
       "tool_choice", "not in 'tools'"},
      {C, "{" + kMsgs + R"(, "tool_choice": "required"})", "tool_choice", "needs 'tools'"},
      {C, "{" + kMsgs + R"(, "tools": [{"function": {"name": "f"}}], "parallel_tool_calls": 1})", "parallel_tool_calls",
       "boolean"},
      {C, "{" + kMsgs + R"(, "functions": [{"name": "f"}]})", "functions", "use 'tools'"},
      {C, "{" + kMsgs + R"(, "reasoning_effort": "extreme"})", "reasoning_effort", "minimal, low, medium or high"},
      {C, R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": 3}}]}]})",
       "messages[0].tool_calls[0].function.name", "must be a string"},
      {C, R"({"messages": [{"role": "assistant", "tool_calls": {}}]})", "messages[0].tool_calls", "must be an array"},
      {P, R"({"prompt": "x", "tools": [{"function": {"name": "f"}}]})", "tools", "chat completions"},
      {C, "{" + kMsgs + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string"}}}})",
       "response_format", "root must be an object"},
      {C, "{" + kMsgs + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"allOf": []}}}}}})",
       "response_format", "'allOf' is not supported"},
      {C, "{" + kMsgs + R"(, "response_format": {"type": "json_schema"}})", "response_format", "needs a 'json_schema' object"},
      {C, "{" + kMsgs + R"(, "response_format": {"type": "yaml"}})", "response_format", "must be text, json_object"},
      {C, "{" + kMsgs + R"(, "response_format": {}})", "response_format", "string 'type'"},
      {P, R"({"prompt": "x", "response_format": {"type": 1}})", "response_format", "string 'type'"},
      {P, "{}", "prompt", "required"},
      {P, R"({"prompt": 5})", "prompt", "must be a string"},
      {P, R"({"prompt": []})", "prompt", "must not be empty"},
      {P, R"({"prompt": [)" + repeated("\"a\"", 65) + "]}", "prompt", "at most 64"},
      {P, R"({"prompt": ["a", [1]]})", "prompt", "mixed"},
      {P, R"({"prompt": [1, "a"]})", "prompt", "token id"},
      {P, R"({"prompt": [1, 512]})", "prompt", "outside the vocabulary"},
      {P, R"({"prompt": [-3]})", "prompt", "outside the vocabulary"},
      {P, R"({"prompt": [[]]})", "prompt", "empty token list"},
      {P, R"({"prompt": [{}]})", "prompt", "found {}"},
      {P, R"({"prompt": "x", "logprobs": 6})", "logprobs", "[0, 5]"},
      {P, R"({"prompt": "x", "logprobs": true})", "logprobs", "integer"},
      {P, R"({"prompt": "x", "echo": 1})", "echo", "boolean"},
      {P, R"({"prompt": "x", "max_tokens": -1})", "max_tokens", "integer in [0,"},
      {C, "{" + kMsgs + R"(, "max_tokens": 0})", "max_tokens", "integer in [1,"},
      {P, R"({"prompt": "x", "suffix": 5})", "suffix", "must be a string"},
      {P, R"({"prompt": "x", "best_of": 3})", "best_of", "best_of=1"},
      {P, R"({"prompt": "x", "n": 1.5})", "n", "integer"},
  };
}

TEST(RequestParse, EveryBadRequestIsA400NamingItsParameter) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.body);
    try {
      if (c.endpoint == Endpoint::kChat) {
        chat(c.body);
      } else {
        completion(c.body);
      }
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.type(), "invalid_request_error");
      EXPECT_EQ(e.param(), c.param) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
      const json j = e.to_json();
      ASSERT_TRUE(j.contains("error"));
      for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(k)) << k;
    }
  }
}

TEST(RequestParse, ResponseFormatJsonObjectConstrainsTheOutput) {
  EXPECT_TRUE(chat("{" + kMsgs + R"(, "response_format": {"type": "json_object"}})").generation.json_object);
  EXPECT_TRUE(completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})").generation.json_object);
  EXPECT_FALSE(chat("{" + kMsgs + R"(, "response_format": {"type": "text"}})").generation.json_object);
  EXPECT_FALSE(chat("{" + kMsgs + "}").generation.json_object);
  const auto schema = chat("{" + kMsgs + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "p",
      "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}})");
  EXPECT_TRUE(schema.generation.json_object);
  ASSERT_TRUE(schema.generation.json_constraint.schema);
  EXPECT_EQ(schema.generation.json_constraint.schema->node(0).kind, sampling::SchemaNode::Kind::kObject);
}

TEST(RequestParse, ChatFieldsMapToTheEngineRequest) {
  const auto r = chat(R"({"model": "m", "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null}],
    "temperature": 0, "top_p": 0.5, "top_k": 40, "min_p": 0.1, "seed": 42, "stop": "END",
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"7": -100, "9": 2.5},
    "logprobs": true, "top_logprobs": 3, "max_tokens": 10, "max_completion_tokens": 12,
    "n": 1, "stream": true, "stream_options": {"include_usage": true}, "user": "u",
    "unknown_extra": {"ignored": true}, "tools": [], "response_format": {"type": "text"}})");
  EXPECT_EQ(r.endpoint, Endpoint::kChat);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].content, "");
  const auto& s = r.generation.sampling;
  EXPECT_EQ(s.temperature, 0.0f);
  EXPECT_EQ(s.top_p, 0.5f);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(s.presence_penalty, 0.5f);
  EXPECT_EQ(s.frequency_penalty, -0.5f);
  ASSERT_EQ(s.logit_bias.size(), 2u);
  EXPECT_EQ(s.top_logprobs, 3);
  EXPECT_TRUE(r.generation.sampling.logprobs);
  EXPECT_EQ(r.generation.max_tokens, 12);  // max_completion_tokens wins
  EXPECT_EQ(r.generation.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.user, "u");
}

TEST(RequestParse, NullMeansNotGivenAndDefaultsApply) {
  const auto r = chat("{" + kMsgs + R"(, "temperature": null, "stop": null, "seed": null, "max_tokens": null})");
  EXPECT_EQ(r.generation.sampling.temperature, 1.0f);
  EXPECT_TRUE(r.generation.stop.empty());
  EXPECT_FALSE(r.seed_given);
  EXPECT_EQ(r.generation.max_tokens, -1);  // chat: until stop or the context ends
  EXPECT_FALSE(r.stream);
}

TEST(RequestParse, CompletionPromptForms) {
  EXPECT_EQ(*completion(R"({"prompt": "Once"})").prompts.at(0).text, "Once");
  EXPECT_EQ(*completion(R"({"prompt": ["Once"]})").prompts.at(0).text, "Once");
  EXPECT_EQ(completion(R"({"prompt": [1, 2, 3]})").prompts.at(0).tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(completion(R"({"prompt": [[4, 5.0]]})").prompts.at(0).tokens, (std::vector<int32_t>{4, 5}));
  const auto batch = completion(R"({"prompt": ["a", "b", "c"]})");
  ASSERT_EQ(batch.prompts.size(), 3u);
  EXPECT_EQ(*batch.prompts[2].text, "c");
  const auto token_batch = completion(R"({"prompt": [[1, 2], [3]]})");
  ASSERT_EQ(token_batch.prompts.size(), 2u);
  EXPECT_FALSE(token_batch.prompts[1].text);
  EXPECT_EQ(token_batch.prompts[1].tokens, (std::vector<int32_t>{3}));
  const auto r = completion(R"({"prompt": "x", "logprobs": 2, "echo": false, "best_of": 1})");
  EXPECT_EQ(r.generation.max_tokens, 16);  // OpenAI's default for completions
  EXPECT_TRUE(r.generation.sampling.logprobs);
  EXPECT_EQ(r.generation.sampling.top_logprobs, 2);
}

TEST(RequestParse, DeepNestingIsA400NotAStackOverflow) {
  const std::string deep = R"({"messages": )" + std::string(200000, '[') + std::string(200000, ']') + "}";
  try {
    chat(deep);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than"), std::string::npos) << e.what();
  }
  // Brackets inside strings do not count; moderate nesting is fine.
  EXPECT_NO_THROW(chat(R"({"messages": [{"role": "user", "content": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"[["}],
                        "x": [[[[[[[[[{}]]]]]]]]]})"));
}

TEST(ApiErrors, KeelErrorsMapToStatuses) {
  EXPECT_EQ(from_error(Error(ErrorCode::kInvalidArgument, "x")).status(), 400);
  EXPECT_EQ(from_error(Error(ErrorCode::kBusy, "x")).status(), 429);
  EXPECT_EQ(from_error(Error(ErrorCode::kInternal, "x")).status(), 500);
  EXPECT_EQ(from_error(unavailable("loading", "x")).status(), 503);
  const json j = bad_request("", "whole body").to_json();
  EXPECT_TRUE(j["error"]["param"].is_null());
}


TEST(RequestParse, ToolsToolChoiceAndToolHistory) {
  const auto r = chat(R"({"messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": {"tz": "UTC"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
      {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": [{"type": "text", "text": "noon"}]}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
              {"type": "function", "function": {"name": "get_time"}}],
    "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "parallel_tool_calls": false})");
  ASSERT_EQ(r.tools.size(), 2u);
  EXPECT_EQ(r.tools[0].name, "get_weather");
  EXPECT_EQ(r.tools[0].description, "d");
  EXPECT_EQ(json::parse(r.tools[0].parameters)["properties"]["city"]["type"], "string");
  EXPECT_EQ(json::parse(r.tools[1].parameters)["type"], "object");  // none given: no arguments
  EXPECT_EQ(r.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(r.tool_choice_name, "get_time");
  ASSERT_EQ(r.messages.size(), 4u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(r.messages[1].content, "");
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(json::parse(r.messages[1].tool_calls[1].arguments)["tz"], "UTC");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[3].name, "get_time");
  EXPECT_EQ(r.messages[3].content, "noon");
  // Defaults: auto with tools, none without; "none" switches them off.
  EXPECT_EQ(chat("{" + kMsgs + R"(, "tools": [{"function": {"name": "f"}}]})").tool_choice, ToolChoice::kAuto);
  EXPECT_EQ(chat("{" + kMsgs + "}").tool_choice, ToolChoice::kNone);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "tool_choice": "none"})").tool_choice, ToolChoice::kNone);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "tools": [{"function": {"name": "f"}}], "tool_choice": "required"})").tool_choice,
            ToolChoice::kRequired);
}

TEST(RequestParse, ReasoningEffort) {
  EXPECT_EQ(chat("{" + kMsgs + R"(, "reasoning_effort": "high"})").reasoning_effort, "high");
  EXPECT_EQ(chat("{" + kMsgs + R"(, "reasoning_effort": "minimal"})").reasoning_effort, "low");
  EXPECT_EQ(chat("{" + kMsgs + "}").reasoning_effort, "");
}

TEST(RequestParse, EchoWithLogprobsScoresThePrompt) {
  auto r = completion(R"({"prompt": "x", "echo": true, "logprobs": 3, "max_tokens": 0})");
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.generation.prompt_logprobs, 3);
  EXPECT_EQ(r.generation.max_tokens, 0);
  r = completion(R"({"prompt": "x", "echo": true})");
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.generation.prompt_logprobs, -1);  // no logprobs: nothing to score
  r = completion(R"({"prompt": "x", "logprobs": 1})");
  EXPECT_EQ(r.generation.prompt_logprobs, -1);  // no echo: the prompt is not reported
}

}  // namespace
}  // namespace keel::server
