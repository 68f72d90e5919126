// The HTTP layer end to end over loopback, with FakeEngine behind it (Qwen3 tokenizer fixture
// and its real chat template): SSE framing, reasoning and tool-call responses, error envelopes,
// auth, size limits, the loading state, mid-stream failures and client disconnects.
#include <gtest/gtest.h>

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/mapped_file.h"
#include "fake_engine.h"
#include "server/http_server.h"
#include "server/listen_backlog.h"

using namespace portllm;
using namespace std::chrono_literals;
using Json = nlohmann::ordered_json;

namespace {

const std::string kTokDir = std::string(PORTLLM_TEST_DATA) + "/tokenizers/qwen3";

struct Harness {
  explicit Harness(server::ServerConfig cfg = {}, bool with_engine = true) {
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.model_path = kTokDir;
    if (cfg.served_model_name.empty()) cfg.served_model_name = "fake";
    srv = std::make_unique<server::HttpServer>(cfg);
    srv->bind();
    srv->start();
    engine = std::make_shared<test::FakeEngine>(kTokDir);
    if (with_engine) srv->set_engine(engine);
    client = std::make_unique<httplib::Client>("127.0.0.1", srv->port());
    client->set_read_timeout(20);
  }
  ~Harness() {
    srv->stop();
    engine->shutdown();
  }
  httplib::Result post(const std::string& path, const std::string& body, httplib::Headers h = {}) {
    return client->Post(path.c_str(), h, body, "application/json");
  }
  std::unique_ptr<server::HttpServer> srv;
  std::shared_ptr<test::FakeEngine> engine;
  std::unique_ptr<httplib::Client> client;
};

// The JSON payloads of an SSE body, "[DONE]" as the string "[DONE]".
std::vector<Json> sse_events(const std::string& body) {
  std::vector<Json> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string ev = body.substr(pos, end - pos);
    pos = end + 2;
    if (ev.rfind("data: ", 0) != 0) continue;
    std::string payload = ev.substr(6);
    out.push_back(payload == "[DONE]" ? Json("[DONE]") : Json::parse(payload));
  }
  return out;
}

void expect_error(const httplib::Result& r, int status, const std::string& param = "") {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  Json j = Json::parse(r->body);
  ASSERT_TRUE(j.contains("error")) << r->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_TRUE(j["error"].contains("code"));
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r->body;
  }
}

}  // namespace

// The accept queue holds a burst of connections (bench serve opens 64 at once): the packaged
// httplib's own backlog is 5. Linux reports a listening socket's backlog as tcpi_sacked.
TEST(HttpServer, ListenBacklogHoldsABurst) {
  Harness h;
  const int fd = server::find_listening_socket(h.srv->port());
  ASSERT_GE(fd, 0);
  tcp_info info{};
  socklen_t len = sizeof(info);
  ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len), 0);
  EXPECT_GE(info.tcpi_sacked, 64u);
}

// Connections that hold their threads (keep-alive, streams, a client sending its request slowly)
// must not keep others waiting: 300 half-sent requests, then /health answers at once. A fixed
// pool of 256 threads (before) held it for the 60 s read timeout.
TEST(HttpServer, IdleConnectionsDoNotStarveTheOthers) {
  Harness h;
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(h.srv->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const char part[] = "GET /health HTTP/1.1\r\nHost: x\r\n";
    ASSERT_EQ(send(fd, part, sizeof part - 1, 0), ssize_t(sizeof part - 1));
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);  // the server has taken them all
  httplib::Client c("127.0.0.1", h.srv->port());
  c.set_connection_timeout(5);
  c.set_read_timeout(5);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c.Get("/health");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int fd : fds) close(fd);
  ASSERT_TRUE(r) << "no answer within 5 s";
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(s, 2.0);
}

TEST(HttpServer, CompletionNonStreaming) {
  Harness h;
  auto r = h.post("/v1/completions", R"({"model": "fake", "prompt": "Hi", "max_tokens": 100, "n": 2})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["text"], h.engine->script);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  const int ntok = int(h.engine->tokenizer().encode(h.engine->script, false).size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 2 * ntok);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 1);
}

TEST(HttpServer, CompletionEchoLengthAndLogprobs) {
  Harness h;
  auto r = h.post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 2, "echo": true})");
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["text"].get<std::string>().rfind("Hi", 0), 0u);
  r = h.post("/v1/completions", R"({"prompt": [9707], "max_tokens": 3, "logprobs": 1})");
  ASSERT_EQ(r->status, 200) << r->body;
  j = Json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"].size(), 3u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["token_logprobs"][0], -0.5);
}

TEST(HttpServer, CompletionStreamingWithUsage) {
  Harness h;
  auto r = h.post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 100, "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  auto ev = sse_events(r->body);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev.back(), "[DONE]");
  Json usage = ev[ev.size() - 2];
  EXPECT_TRUE(usage["choices"].empty());
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 2 < ev.size(); ++i) {
    text += ev[i]["choices"][0]["text"].get<std::string>();
    if (!ev[i]["choices"][0]["finish_reason"].is_null()) finish = ev[i]["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, h.engine->script);
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage["usage"]["completion_tokens"], int(h.engine->tokenizer().encode(h.engine->script, false).size()));
}

TEST(HttpServer, ChatReasoningSplit) {
  Harness h;
  h.engine->script = "<think>\nTwo plus two.\n</think>\n\nIt is 4.";
  auto r = h.post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "2+2?"}]})");
  ASSERT_EQ(r->status, 200) << r->body;
  Json m = Json::parse(r->body)["choices"][0]["message"];
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["reasoning_content"], "\nTwo plus two.\n");
  EXPECT_EQ(m["content"], "It is 4.");
  // The rendered prompt is the Qwen3 template's (the fake records what it received).
  std::string prompt = h.engine->tokenizer().decode(h.engine->received().back().prompt_ids, false);
  EXPECT_NE(prompt.find("<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"), std::string::npos) << prompt;

  r = h.post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "2+2?"}], "stream": true})");
  ASSERT_EQ(r->status, 200);
  std::string reasoning, content;
  auto ev = sse_events(r->body);
  EXPECT_EQ(ev.front()["choices"][0]["delta"]["role"], "assistant");
  for (auto& e : ev) {
    if (e == "[DONE]") continue;
    auto d = e["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, "\nTwo plus two.\n");
  EXPECT_EQ(content, "It is 4.");
}

TEST(HttpServer, ChatEnableThinkingFalseReachesTemplate) {
  Harness h;
  auto r = h.post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"enable_thinking": false}})");
  ASSERT_EQ(r->status, 200) << r->body;
  std::string prompt = h.engine->tokenizer().decode(h.engine->received().back().prompt_ids, false);
  EXPECT_NE(prompt.find("<think>\n\n</think>"), std::string::npos) << prompt;
}

TEST(HttpServer, ChatToolCalls) {
  Harness h;
  h.engine->script = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  const std::string body = R"({"messages": [{"role": "user", "content": "Weather in Paris?"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})";
  auto r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r->status, 200) << r->body;
  Json c = Json::parse(r->body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Paris\"}");
  EXPECT_EQ(c["message"]["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_TRUE(c["message"]["content"].is_null());
  std::string prompt = h.engine->tokenizer().decode(h.engine->received().back().prompt_ids, false);
  EXPECT_NE(prompt.find("get_weather"), std::string::npos);  // tools rendered by the template

  std::string sbody = body;
  sbody.insert(sbody.size() - 1, ", \"stream\": true");
  r = h.post("/v1/chat/completions", sbody);
  ASSERT_EQ(r->status, 200);
  bool saw_call = false;
  std::string finish;
  for (auto& e : sse_events(r->body)) {
    if (e == "[DONE]") continue;
    auto ch = e["choices"][0];
    if (ch["delta"].contains("tool_calls")) {
      saw_call = true;
      EXPECT_EQ(ch["delta"]["tool_calls"][0]["index"], 0);
      EXPECT_EQ(ch["delta"]["tool_calls"][0]["function"]["name"], "get_weather");
    }
    if (ch["delta"].contains("content")) {
      EXPECT_EQ(ch["delta"]["content"], "");  // no raw markup leaks
    }
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_TRUE(saw_call);
  EXPECT_EQ(finish, "tool_calls");

  // tool_choice none: the tools are not rendered and the output is plain content.
  std::string none = body;
  none.insert(none.size() - 1, ", \"tool_choice\": \"none\"");
  r = h.post("/v1/chat/completions", none);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["choices"][0]["finish_reason"], "stop");
  prompt = h.engine->tokenizer().decode(h.engine->received().back().prompt_ids, false);
  EXPECT_EQ(prompt.find("get_weather"), std::string::npos);

  // Named tool choice: the prompt ends with the opening of that call.
  std::string named = body;
  named.insert(named.size() - 1, R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  h.engine->script = "{\"city\": \"Rome\"}}\n</tool_call>";
  r = h.post("/v1/chat/completions", named);
  ASSERT_EQ(r->status, 200) << r->body;
  c = Json::parse(r->body)["choices"][0];
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Rome\"}");
}

// Qwen3.6's template (given as --chat-template): the tool-call parser is detected from it
// (qwen3_coder), a history whose tool call carries its arguments as a JSON string renders (a
// 400 before: the template iterates them with |items), and the XML-like call the model writes
// comes back as a tool call with arguments typed by the request's schema.
TEST(HttpServer, ChatToolCallsWithQwen36Template) {
  server::ServerConfig cfg;
  cfg.chat_template = read_text_file(std::string(PORTLLM_TEST_DATA) + "/jinja/qwen3_6/chat_template.jinja");
  Harness h(cfg);
  h.engine->script = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                     "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
  const std::string body = R"({"messages": [{"role": "user", "content": "Weather in Rome?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\", \"days\": 1}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
      {"role": "user", "content": "And Paris for 3 days?"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]})";
  auto r = h.post("/v1/chat/completions", body);
  ASSERT_EQ(r->status, 200) << r->body;
  Json c = Json::parse(r->body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << r->body;
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Paris\",\"days\":3}");
  const std::string prompt = h.engine->tokenizer().decode(h.engine->received().back().prompt_ids, false);
  EXPECT_NE(prompt.find("<parameter=city>\nRome\n</parameter>"), std::string::npos) << prompt;
}

TEST(HttpServer, ClientErrorsAreEnvelopes) {
  server::ServerConfig cfg;
  cfg.max_request_bytes = 8000;
  Harness h(cfg);
  expect_error(h.post("/v1/completions", "{nope"), 400);
  expect_error(h.post("/v1/completions", "[1,2]"), 400);
  expect_error(h.post("/v1/completions", R"({"prompt": ""})"), 400, "prompt");
  expect_error(h.post("/v1/chat/completions", R"({"messages": []})"), 400, "messages");
  expect_error(h.post("/v1/completions", R"({"prompt": "x", "model": "other"})"), 404, "model");
  expect_error(h.post("/v1/completions", R"({"prompt": "x", "temperature": -1})"), 400, "temperature");
  expect_error(h.post("/v1/completions", R"({"prompt": [999999999]})"), 400, "prompt");
  expect_error(h.post("/v1/completions", R"({"prompt": "x", "logit_bias": {"x": 1}})"), 400, "logit_bias");
  expect_error(h.post("/v1/completions", R"({"prompt": "x", "stop": [""]})"), 400, "stop");
  expect_error(h.post("/v1/completions", std::string(R"({"prompt": ")") + std::string(9000, 'a') + "\"}"), 413);
  expect_error(h.client->Get("/v1/nothing"), 404);
  // Over the context (512 in the fake), streaming or not: a 400 JSON reply, no SSE events.
  std::vector<int> ids(600, 9707);
  Json long_prompt{{"prompt", ids}, {"stream", true}};
  auto r = h.post("/v1/completions", long_prompt.dump());
  expect_error(r, 400, "prompt");
  EXPECT_EQ(r->body.find("data:"), std::string::npos);
  expect_error(h.post("/v1/completions", R"({"prompt": "x", "max_tokens": 600})"), 400, "max_tokens");
  // Nothing reached the engine.
  EXPECT_TRUE(h.engine->received().empty());
}

TEST(HttpServer, ApiKey) {
  server::ServerConfig cfg;
  cfg.api_key = "sk-test";
  Harness h(cfg);
  expect_error(h.post("/v1/completions", R"({"prompt": "x"})"), 401);
  expect_error(h.post("/v1/completions", R"({"prompt": "x"})", {{"Authorization", "Bearer sk-tesT"}}), 401);
  auto r = h.post("/v1/completions", R"({"prompt": "x"})", {{"Authorization", "Bearer sk-test"}});
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(h.client->Get("/health")->status, 200);
  expect_error(h.client->Get("/v1/models"), 401);
}

TEST(HttpServer, LoadingStateIs503) {
  Harness h({}, false);
  expect_error(h.client->Get("/health"), 503);
  expect_error(h.post("/v1/completions", R"({"prompt": "x"})"), 503);
  h.srv->set_engine(h.engine);
  EXPECT_EQ(h.client->Get("/health")->status, 200);
}

TEST(HttpServer, ShuttingDownIs503) {
  Harness h;
  EXPECT_EQ(h.client->Get("/health")->status, 200);
  h.srv->set_shutting_down();
  expect_error(h.client->Get("/health"), 503);
  expect_error(h.post("/v1/completions", R"({"prompt": "x"})"), 503);
  expect_error(h.post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})"), 503);
}

TEST(HttpServer, FailureMidStreamSendsErrorThenDone) {
  Harness h;
  h.engine->fail_after = 2;
  auto r = h.post("/v1/completions", R"({"prompt": "x", "max_tokens": 50, "stream": true})");
  ASSERT_EQ(r->status, 200);
  auto ev = sse_events(r->body);
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_TRUE(ev[ev.size() - 2].contains("error")) << r->body;
}

TEST(HttpServer, StreamNeverCarriesInvalidUtf8) {
  Harness h;
  h.engine->raw_text = std::string("bad\xC3(") + "\xFF";
  auto r = h.post("/v1/completions", R"({"prompt": "x", "max_tokens": 3, "stream": true})");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->body.find('\xFF'), std::string::npos);
  EXPECT_NE(r->body.find("bad\xEF\xBF\xBD("), std::string::npos);
}

TEST(HttpServer, DisconnectAbortsTheRequest) {
  Harness h;
  std::string long_script;
  for (int i = 0; i < 200; ++i) long_script += " word";
  h.engine->script = long_script;
  h.engine->token_delay_ms = 20;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"prompt": "x", "max_tokens": 200, "stream": true})";
  req.set_header("Content-Type", "application/json");
  int chunks = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };  // hang up
  h.client->send(req);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (h.engine->aborted().empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(h.engine->aborted().size(), 1u);
  while (h.engine->stats().num_running > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(h.engine->stats().num_free_kv_blocks, 100);
}

TEST(HttpServer, ModelsMetricsTokenize) {
  Harness h;
  auto r = h.client->Get("/v1/models");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["data"][0]["id"], "fake");
  h.post("/v1/completions", R"({"prompt": "x", "max_tokens": 3})");
  r = h.client->Get("/metrics");
  ASSERT_EQ(r->status, 200);
  for (const char* m : {"portllm_num_requests_running", "portllm_num_requests_waiting", "portllm_kv_cache_usage_perc",
                        "portllm_prompt_tokens_total", "portllm_generation_tokens_total", "portllm_prefix_cache_hit_rate",
                        "portllm_time_to_first_token_seconds_bucket", "portllm_time_per_output_token_seconds_count"})
    EXPECT_NE(r->body.find(m), std::string::npos) << m;
  EXPECT_NE(r->body.find("portllm_time_to_first_token_seconds_count 1"), std::string::npos) << r->body;
  r = h.post("/tokenize", R"({"prompt": "Hello world"})");
  ASSERT_EQ(r->status, 200) << r->body;
  Json tj = Json::parse(r->body);
  EXPECT_EQ(tj["tokens"], Json(h.engine->tokenizer().encode("Hello world", true)));
  r = h.post("/detokenize", Json{{"tokens", tj["tokens"]}}.dump());
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["prompt"], "Hello world");
  expect_error(h.post("/detokenize", R"({"tokens": [-5]})"), 400, "tokens");
  r = h.post("/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_GT(Json::parse(r->body)["count"].get<int>(), 3);
}

TEST(HttpServer, NonStreamingDisconnectAbortsTheRequest) {
  Harness h;
  std::string long_script;
  for (int i = 0; i < 300; ++i) long_script += " word";
  h.engine->script = long_script;
  h.engine->token_delay_ms = 20;  // ~6 s of generation: the reply switches to heartbeats
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"prompt": "x", "max_tokens": 300})";
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return false; };  // hang up at the first byte
  h.client->send(req);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (h.engine->aborted().empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(h.engine->aborted().size(), 1u);
}
