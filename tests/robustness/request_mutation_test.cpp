// Mutated /v1/chat/completions and /v1/completions bodies through what the routes do before the
// engine: parse_body, parse_*_request, and for chat the Qwen3 chat template with the request's
// tools and kwargs. Each body is accepted or refused with a 4xx (a template error becomes a 400
// in the route); nothing else, since any other exception is a 500 and a crash takes the server.
#include <gtest/gtest.h>

#include "core/mapped_file.h"
#include "json_mutator.h"
#include "limits.h"
#include "outcome.h"
#include "server/openai_protocol.h"
#include "tokenizer/chat_template.h"

using namespace portllm;
using namespace portllm::robustness;
using server::Json;

namespace {

constexpr int kMutants = 3000;
constexpr int32_t kVocab = 1000;

const char* kChatBody = R"({
  "model": "m", "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 20, "min_p": 0.05,
  "presence_penalty": 0.5, "frequency_penalty": 0.5, "repetition_penalty": 1.1, "seed": 7, "n": 2,
  "stop": ["\n\n", "END"], "stop_token_ids": [5, 6], "logit_bias": {"11": -100, "12": 5},
  "logprobs": true, "top_logprobs": 3, "stream": true, "stream_options": {"include_usage": true},
  "ignore_eos": false, "min_tokens": 1, "skip_special_tokens": true, "response_format": {"type": "text"},
  "chat_template_kwargs": {"enable_thinking": false},
  "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content": null, "reasoning_content": "Look it up.",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
    {"role": "user", "content": "And tomorrow?"}
  ]
})";

const char* kCompletionBody = R"({
  "model": "m", "prompt": ["Once upon a time", [1, 2, 3]], "max_tokens": 8, "echo": false, "logprobs": 2,
  "temperature": 0, "stop": "x", "best_of": 1, "suffix": null, "user": "u", "seed": 1,
  "logit_bias": {"3": 1.5}, "stream": false
})";

// The fields of both bodies, as donors: each endpoint also meets the other's fields.
std::vector<std::pair<std::string, std::string>> request_fields() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* body : {kChatBody, kCompletionBody}) {
    const Json j = Json::parse(body);  // items() of a temporary would dangle
    for (auto& [k, v] : j.items()) out.emplace_back(k, v.dump());
  }
  return out;
}

// Runs f; a 4xx ApiError counts as a refusal, any other status as a finding.
template <class F>
void run_request(Tally& tally, F&& f, const std::string& log) {
  tally.run(
      [&] {
        try {
          f();
        } catch (const server::ApiError& e) {
          if (e.status >= 400 && e.status < 500) throw Error(e.what());
          throw std::runtime_error(fmt::format("ApiError {}: {}", e.status, e.what()));
        }
      },
      "", log);
}

tok::ChatTemplate qwen3_template() {
  return tok::ChatTemplate::from_tokenizer_dir(std::string(PORTLLM_TEST_DATA) + "/tokenizers/qwen3");
}

// The templates the chat mutants are rendered with, in turn: Qwen3's, Qwen3.6's (tools,
// reasoning, multimodal branches), DeepSeek-V3's and Llama 3's.
std::vector<tok::ChatTemplate> chat_templates() {
  const std::string data = PORTLLM_TEST_DATA;
  std::vector<tok::ChatTemplate> out;
  out.push_back(qwen3_template());
  out.push_back(tok::ChatTemplate::from_string(read_text_file(data + "/jinja/qwen3_6/chat_template.jinja"), "",
                                               "<|im_end|>", "qwen3_6"));
  out.push_back(tok::ChatTemplate::from_tokenizer_dir(data + "/tokenizers/deepseek_v3"));
  out.push_back(tok::ChatTemplate::from_tokenizer_dir(data + "/tokenizers/llama3"));
  return out;
}

// What routes_chat.cpp does between the body and the tokenizer.
void chat_route(const tok::ChatTemplate& tmpl, const std::string& text) {
  const server::ChatRequest req = server::parse_chat_request(server::parse_body(text), kVocab);
  Json kwargs = req.chat_template_kwargs;
  kwargs["add_generation_prompt"] = req.add_generation_prompt;
  if (!req.tools.is_null()) kwargs["tools"] = req.tools;
  try {
    (void)tmpl.render(req.messages, kwargs);
  } catch (const Error& e) {
    throw server::bad_request(e.what(), "messages");
  }
}

}  // namespace

// Runs `route(i, body text)` on kMutants mutants of `body` (seeds from `seed0`), each with 1-3
// mutations and the donors of both endpoints, and returns the tally.
template <class Route>
Tally mutate_requests(const Json& body, uint64_t seed0, Route&& route) {
  Tally tally;
  const auto donors = request_fields();
  for (int i = 0; i < mutants(kMutants); ++i) {
    JsonMutator m(seed0 + uint64_t(i));
    m.set_donors(donors);
    const Json mutant = m.mutate(body, 1 + i % 3);
    run_request(tally, [&] { route(i, dump(mutant)); }, m.log());
  }
  return tally;
}

TEST(Robustness, MutatedChatRequests) {
  cap_address_space();
  const std::vector<tok::ChatTemplate> templates = chat_templates();
  const Json body = Json::parse(kChatBody);
  for (const auto& t : templates) ASSERT_NO_THROW(chat_route(t, body.dump())) << t.source().substr(0, 80);
  const Tally tally = mutate_requests(body, 5000, [&](int i, const std::string& text) {
    chat_route(templates[size_t(i) % templates.size()], text);  // the templates in turn
  });
  expect_contract(tally, 200, 1000);
}

TEST(Robustness, MutatedCompletionRequests) {
  cap_address_space();
  const Json body = Json::parse(kCompletionBody);
  auto route = [](int, const std::string& text) { (void)server::parse_completion_request(server::parse_body(text), kVocab); };
  ASSERT_NO_THROW(route(0, body.dump()));
  expect_contract(mutate_requests(body, 9000, route), 200, 1000);
}

// Bodies nested 100,000 levels deep (a few hundred kB, inside the default request size limit):
// objects in a tool's parameters, which the template prints with tojson, and arrays as a
// message's content. Each is refused with a 400, not a stack overflow in a recursive parse,
// conversion, dump or destructor.
TEST(Robustness, DeeplyNestedRequestBody) {
  cap_address_space();
  const tok::ChatTemplate tmpl = qwen3_template();
  const int depth = 100000;
  std::string objects;
  for (int i = 0; i < depth; ++i) objects += R"({"x": )";
  objects += "1" + std::string(depth, '}');
  const std::string in_tools = R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", )"
                               R"("function": {"name": "f", "parameters": )" + objects + "}}]}";
  const std::string in_content =
      R"({"messages": [{"role": "user", "content": )" + std::string(depth, '[') + std::string(depth, ']') + "}]}";
  Tally tally;
  run_request(tally, [&] { chat_route(tmpl, in_tools); }, "tools[0].function.parameters: objects nested 100000 deep");
  run_request(tally, [&] { chat_route(tmpl, in_content); }, "messages[0].content: arrays nested 100000 deep");
  EXPECT_TRUE(tally.findings.empty()) << tally.report();
  EXPECT_EQ(tally.refused, 2) << tally.report();
}
