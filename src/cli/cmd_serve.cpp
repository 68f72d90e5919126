// portllm serve: the OpenAI-compatible HTTP server. Flags follow SGLang / vLLM names. The server
// listens first (GET /health answers 503 while the model loads), then loads the engine.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <signal.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/error.h"
#include "server/generation_run.h"
#include "server/http_server.h"

namespace portllm::cli {

namespace {

std::atomic<int> g_signal{0};  // set by the SIGINT/SIGTERM handler; -1: the model failed to load

struct ServeOptions {
  EngineOptions engine;
  server::ServerConfig server;
  int tp_size = 1;
  int64_t context_length = 0;
  int max_prefill_tokens = 0;
  std::string chat_template;
  uint64_t seed = 0;
  int load_delay_ms = 0;
};

// --chat-template: a file, or the template text itself (it then contains Jinja markup).
std::string resolve_chat_template(const std::string& arg) {
  if (arg.empty()) return {};
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) {
    std::ifstream f(arg, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    // A .json file may hold {"chat_template": "..."} (the HF chat_template.json layout).
    if (arg.size() > 5 && arg.substr(arg.size() - 5) == ".json") {
      try {
        auto j = nlohmann::json::parse(s);
        if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string()) return j["chat_template"].get<std::string>();
      } catch (const std::exception&) {
      }
    }
    return s;
  }
  if (arg.find("{{") != std::string::npos || arg.find("{%") != std::string::npos) return arg;
  PL_THROW("--chat-template '{}' is neither a file nor a Jinja template", arg);
}

void run(ServeOptions& o) {
  if (o.tp_size != 1) PL_THROW("--tp-size {} is not supported yet: only --tp-size 1 (one device) works", o.tp_size);
  EngineConfig ecfg = engine_config(o.engine);
  ecfg.serving = true;
  if (o.context_length > 0) ecfg.max_model_len = o.context_length;
  if (o.max_prefill_tokens > 0) ecfg.max_num_batched_tokens = o.max_prefill_tokens;
  ecfg.seed = o.seed;
  o.server.model_path = ecfg.model_path;
  o.server.chat_template = resolve_chat_template(o.chat_template);
  if (o.server.max_request_bytes == 0) PL_THROW("--max-request-bytes must be positive");

  // SIGINT/SIGTERM only set a flag (whichever thread receives them, including threads that
  // libraries started before main); this thread polls it. A client that disconnects must not
  // kill us: SIGPIPE is ignored and write errors are handled where they occur.
  std::signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = [](int sig) { g_signal.store(sig); };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  server::HttpServer srv(o.server);
  srv.bind();
  srv.start();
  std::fprintf(stderr, "portllm serve: listening on http://%s:%d (loading %s)\n", o.server.host.c_str(), srv.port(), ecfg.model_path.c_str());

  std::shared_ptr<Engine> engine;
  std::thread loader([&] {
    try {
      if (o.load_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.load_delay_ms));
      engine = std::shared_ptr<Engine>(Engine::create(ecfg));
      srv.set_engine(engine);
      std::fprintf(stderr, "portllm serve: model loaded (max_model_len %lld); ready\n", (long long)engine->max_model_len());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: loading the model failed: %s\n", e.what());
      srv.set_load_error(e.what());
      g_signal.store(-1);  // nothing to serve: exit
    }
  });
  while (g_signal.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (g_signal.load() > 0) std::fprintf(stderr, "portllm serve: signal %d, shutting down\n", g_signal.load());
  loader.join();
  // Engine first: requests in flight finish with finish_reason "abort", so their streams still
  // end with data: [DONE]; then the HTTP side (which waits for those handlers) stops.
  const bool failed = !engine;
  srv.set_shutting_down();  // requests arriving from here on get 503 (load balancers retry elsewhere)
  if (engine) engine->shutdown();
  for (int i = 0; i < 100 && server::GenerationRun::live() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  srv.stop();
  if (failed) PL_THROW("the model could not be loaded");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (/v1/completions, /v1/chat/completions, ...)");
  add_engine_options(cmd, o->engine);
  auto& s = o->server;
  cmd->add_option("--host", s.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", s.port, "port to listen on (0: any free port)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--served-model-name", s.served_model_name, "model name in the API (default: the model directory's name)");
  cmd->add_option("--api-key", s.api_key, "require 'Authorization: Bearer KEY' on the API routes (/health and /metrics stay public)");
  cmd->add_option("--max-request-bytes", s.max_request_bytes, "largest accepted request body (413 above)")->capture_default_str();
  cmd->add_option("--chat-template", o->chat_template, "chat template: a file (.jinja, or chat_template.json) or the template text");
  cmd->add_option("--tool-call-parser", s.tool_call_parser, "auto | qwen | qwen3_coder | deepseek_v3 | none")->capture_default_str();
  cmd->add_option("--reasoning-parser", s.reasoning_parser, "auto | qwen3 | deepseek_r1 | none (split <think> blocks into reasoning_content)")->capture_default_str();
  cmd->add_option("--http-threads", s.http_threads, "most HTTP connections served at once (a thread each, made on demand; a stream or a keep-alive connection holds one)")->capture_default_str();
  cmd->add_option("--tp-size,--tensor-parallel-size", o->tp_size, "tensor parallel size (only 1 is supported now)")->capture_default_str();
  cmd->add_option("--context-length", o->context_length, "alias of --max-model-len (SGLang name)");
  cmd->add_option("--max-prefill-tokens", o->max_prefill_tokens, "token budget of one step (SGLang name of --max-num-batched-tokens)");
  cmd->add_option("--seed", o->seed, "engine seed (default sampling seed and dummy weights)");
  cmd->add_option("--load-delay-ms", o->load_delay_ms, "wait before loading the model (tests of the loading state)")->group("");
  cmd->callback([o] { run(*o); });
}

}  // namespace portllm::cli
