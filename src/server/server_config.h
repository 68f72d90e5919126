// Settings of the HTTP layer (the engine has its own EngineConfig).
#pragma once
#include <cstddef>
#include <string>

namespace portllm::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string model_path;              // for the chat template of tokenizer_config.json
  std::string served_model_name;       // default: the model directory's name
  std::string api_key;                 // empty: no authentication
  size_t max_request_bytes = 32u << 20;
  std::string chat_template;           // template source text (from --chat-template); empty: the model's
  std::string tool_call_parser = "auto";   // auto | qwen | deepseek_v3 | none
  std::string reasoning_parser = "auto";   // auto | qwen3 | deepseek_r1 | none
  int http_threads = 4096;             // most connections served at once: a thread each, made on demand
};

}  // namespace portllm::server
