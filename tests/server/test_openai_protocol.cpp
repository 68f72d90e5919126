#include <gtest/gtest.h>

#include "server/http_server.h"
#include "server/openai_protocol.h"

using namespace portllm::server;

namespace {
constexpr int32_t kVocab = 512;

Json J(const char* s) { return Json::parse(s); }

// The 400 error's param, or "<no error>".
std::string completion_error(const char* body) {
  try {
    parse_completion_request(J(body), kVocab);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << body;
    return e.param;
  }
  return "<no error>";
}
std::string chat_error(const char* body) {
  try {
    parse_chat_request(J(body), kVocab);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << body;
    return e.param;
  }
  return "<no error>";
}
}  // namespace

TEST(OpenAIProtocol, BodyMustBeJsonObject) {
  EXPECT_THROW(parse_body("{not json"), ApiError);
  EXPECT_THROW(parse_body("[1, 2]"), ApiError);
  EXPECT_THROW(parse_body("\"text\""), ApiError);
  EXPECT_NO_THROW(parse_body("{}"));
  // Nesting past 512 levels is refused by name (the routes' copies and dumps recurse).
  const auto nested = [](int depth) { return "{\"a\": " + std::string(size_t(depth), '[') + std::string(size_t(depth), ']') + "}"; };
  EXPECT_NO_THROW(parse_body(nested(500)));
  try {
    parse_body(nested(600));
    ADD_FAILURE() << "a body nested 600 deep was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(std::string(e.what()).find("deeper than 512"), std::string::npos) << e.what();
  }
}

TEST(OpenAIProtocol, CompletionPromptForms) {
  auto r = parse_completion_request(J(R"({"prompt": "hi"})"), kVocab);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_text);
  r = parse_completion_request(J(R"({"prompt": ["a", "b"]})"), kVocab);
  EXPECT_EQ(r.prompts.size(), 2u);
  r = parse_completion_request(J(R"({"prompt": [1, 2, 3]})"), kVocab);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
  r = parse_completion_request(J(R"({"prompt": [[1], [4, 5]]})"), kVocab);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].ids, (std::vector<int32_t>{4, 5}));
  EXPECT_FALSE(r.max_tokens.has_value());
}

TEST(OpenAIProtocol, CompletionRejectsBadPrompts) {
  EXPECT_EQ(completion_error(R"({})"), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": ""})"), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": []})"), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": [[]]})"), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": 5})"), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": [1, 512]})"), "prompt");  // out of vocabulary
  EXPECT_EQ(completion_error(R"({"prompt": [-1]})"), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": [1.5]})"), "prompt");
}

TEST(OpenAIProtocol, SamplingFieldsMapToSamplingParams) {
  auto r = parse_completion_request(J(R"({"prompt": "x", "n": 3, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.1,
      "repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"7": 5, "9": -100},
      "seed": 42, "max_tokens": 20, "min_tokens": 2, "stop": ["\n", "END"], "stop_token_ids": [2], "ignore_eos": true,
      "skip_special_tokens": false, "logprobs": 3, "stream": true, "stream_options": {"include_usage": true}})"), kVocab);
  const auto& s = r.sampling;
  EXPECT_EQ(s.n, 3);
  EXPECT_FLOAT_EQ(s.temperature, 0.5f);
  EXPECT_FLOAT_EQ(s.top_p, 0.9f);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(s.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -0.5f);
  EXPECT_EQ(s.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(s.logit_bias.at(9), -100.f);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(r.max_tokens, 20);
  EXPECT_EQ(s.min_tokens, 2);
  EXPECT_EQ(s.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(s.stop_token_ids, (std::vector<int32_t>{2}));
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_FALSE(s.skip_special_tokens);
  EXPECT_EQ(s.logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(OpenAIProtocol, RejectsOutOfRangeAndWrongTypes) {
  EXPECT_EQ(completion_error(R"({"prompt": "x", "temperature": -0.1})"), "temperature");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "temperature": "hot"})"), "temperature");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "top_p": 0})"), "top_p");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "top_p": 1.5})"), "top_p");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "top_k": -2})"), "top_k");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "top_k": 2.5})"), "top_k");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "min_p": 2})"), "min_p");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "repetition_penalty": 0})"), "repetition_penalty");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "presence_penalty": 3})"), "presence_penalty");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "frequency_penalty": -3})"), "frequency_penalty");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "n": 0})"), "n");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "max_tokens": 0})"), "max_tokens");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "max_tokens": "10"})"), "max_tokens");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "max_tokens": 5, "min_tokens": 6})"), "min_tokens");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logprobs": 21})"), "logprobs");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "stream": "yes"})"), "stream");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "stream_options": {"include_usage": true}})"), "stream_options");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "ignore_eos": 1})"), "ignore_eos");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "seed": "1"})"), "seed");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "model": 3})"), "model");
}

TEST(OpenAIProtocol, RejectsBadStopAndLogitBias) {
  EXPECT_EQ(completion_error(R"({"prompt": "x", "stop": ""})"), "stop");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "stop": ["a", ""]})"), "stop");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "stop": [1]})"), "stop");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "stop_token_ids": [600]})"), "stop_token_ids");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logit_bias": {"abc": 1}})"), "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logit_bias": {"12x": 1}})"), "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logit_bias": {"999": 1}})"), "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logit_bias": {"-1": 1}})"), "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logit_bias": {"5": 101}})"), "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logit_bias": {"5": "a"}})"), "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logit_bias": [1]})"), "logit_bias");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "stop": "a", "logit_bias": {"5": 100}})"), "<no error>");
}

TEST(OpenAIProtocol, ChatMessagesAndTools) {
  auto r = parse_chat_request(J(R"({"messages": [{"role": "system", "content": "s"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_completion_tokens": 9, "max_tokens": 3, "logprobs": true, "top_logprobs": 2,
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "tool_choice": {"type": "function", "function": {"name": "f"}}, "chat_template_kwargs": {"enable_thinking": false}})"), kVocab);
  EXPECT_EQ(r.messages[1]["content"], "ab");
  EXPECT_EQ(r.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_EQ(r.sampling.logprobs, 2);
  EXPECT_EQ(r.tool_choice, ToolChoice::Named);
  EXPECT_EQ(r.tool_choice_name, "f");
  EXPECT_EQ(r.chat_template_kwargs["enable_thinking"], false);
  // Assistant tool-call turns may omit content or send null; templates see "" (as in vLLM).
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": []}]})"), "<no error>");
  auto tc = parse_chat_request(J(R"({"messages": [{"role": "user", "content": "q"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]})"), kVocab);
  EXPECT_EQ(tc.messages[1]["content"], "");
  // Tool-call arguments reach the template as a mapping, parsed from the JSON string clients
  // send (vLLM's _postprocess_messages; Qwen3.6's template iterates them with |items).
  EXPECT_EQ(tc.messages[1]["tool_calls"][0]["function"]["arguments"], Json::object());
  auto args = parse_chat_request(J(R"({"messages": [{"role": "user", "content": "q"},
      {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"city\": \"Paris\", \"days\": [1, 2]}"}}]},
      {"role": "assistant", "content": "x", "tool_calls": []}]})"), kVocab);
  EXPECT_EQ(args.messages[1]["tool_calls"][0]["function"]["arguments"], J(R"({"city": "Paris", "days": [1, 2]})"));
  EXPECT_FALSE(args.messages[2].contains("tool_calls"));  // an empty list takes the plain assistant path
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}]})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "assistant", "tool_calls": ["f"]}]})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "assistant", "tool_calls": {"function": {}}}]})"), "messages");
}

TEST(OpenAIProtocol, ChatRejects) {
  EXPECT_EQ(chat_error(R"({})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": []})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": "hi"})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": [{"content": "x"}]})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "robot", "content": "x"}]})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user"}]})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"), "messages");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})"), "top_logprobs");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})"), "tools");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})"), "tool_choice");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes",
      "tools": [{"type": "function", "function": {"name": "f"}}]})"), "tool_choice");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function", "function": {"name": "g"}},
      "tools": [{"type": "function", "function": {"name": "f"}}]})"), "tool_choice");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": 1})"), "chat_template_kwargs");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})"), "response_format");
  // A "type" of the wrong kind is a 400 naming the field, not a type_error (a 500).
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": 1}})"), "response_format");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": 1, "function": {"name": "f"}}]})"), "tools");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": null, "function": {"name": "f"}},
      "tools": [{"type": "function", "function": {"name": "f"}}]})"), "tool_choice");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": [{"type": true, "text": "x"}]}]})"), "messages");
}

TEST(OpenAIProtocol, MaxTokensAgainstContext) {
  EXPECT_EQ(resolve_max_tokens(10, std::nullopt, 100, 16, "prompt"), 16);
  EXPECT_EQ(resolve_max_tokens(90, std::nullopt, 100, 16, "prompt"), 10);
  EXPECT_EQ(resolve_max_tokens(10, 90, 100, 16, "prompt"), 90);
  EXPECT_THROW(resolve_max_tokens(10, 91, 100, 16, "prompt"), ApiError);
  EXPECT_THROW(resolve_max_tokens(100, std::nullopt, 100, 16, "prompt"), ApiError);
  EXPECT_THROW(resolve_max_tokens(150, 1, 100, 16, "prompt"), ApiError);
}

TEST(OpenAIProtocol, ErrorEnvelopeAndUtf8Safety) {
  Json e = error_body(bad_request("bad 'x'", "x"));
  EXPECT_EQ(e["error"]["message"], "bad 'x'");
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_EQ(e["error"]["param"], "x");
  EXPECT_TRUE(e["error"]["code"].is_null());
  // Invalid UTF-8 never reaches the wire: it becomes U+FFFD.
  Json j{{"text", std::string("a\xC3") + "b"}};
  EXPECT_EQ(dump_json(j), "{\"text\":\"a\xEF\xBF\xBD" "b\"}");
}

TEST(ApiKey, ConstantTimeCompareIsExact) {
  EXPECT_TRUE(api_key_matches("secret", "secret"));
  EXPECT_FALSE(api_key_matches("secreT", "secret"));
  EXPECT_FALSE(api_key_matches("secret1", "secret"));
  EXPECT_FALSE(api_key_matches("secre", "secret"));
  EXPECT_FALSE(api_key_matches("", "secret"));
}
