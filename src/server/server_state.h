// What every route needs: the configuration, the engine (null while the model loads), the chat
// template, metrics. Shared by the route files; owned by HttpServer.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "tokenizer/chat_template.h"

namespace portllm::server {

struct ServerState {
  ServerConfig cfg;
  ServerMetrics metrics;

  std::shared_ptr<Engine> engine() const {
    std::lock_guard<std::mutex> lock(mu);
    return engine_;
  }
  // Null with an explanation in `template_error` when the model has no chat template.
  std::shared_ptr<const tok::ChatTemplate> chat_template() const {
    std::lock_guard<std::mutex> lock(mu);
    return template_;
  }
  std::string template_error() const {
    std::lock_guard<std::mutex> lock(mu);
    return template_error_;
  }
  std::string load_error() const {
    std::lock_guard<std::mutex> lock(mu);
    return load_error_;
  }
  // Resolved once the engine is set: "qwen"/"deepseek_v3" or empty (no tool parsing), and
  // whether <think> blocks are split off.
  std::string tool_parser;
  bool reasoning = false;

  void set_engine(std::shared_ptr<Engine> e);
  void set_load_error(std::string msg) {
    std::lock_guard<std::mutex> lock(mu);
    load_error_ = std::move(msg);
  }
  // Set when the server begins to stop (SIGTERM): new requests and /health get 503, as while the
  // model loads, instead of the engine's refusal surfacing as a client error.
  void set_shutting_down() { shutting_down_.store(true); }
  bool shutting_down() const { return shutting_down_.load(); }

 private:
  mutable std::mutex mu;
  std::shared_ptr<Engine> engine_;
  std::shared_ptr<const tok::ChatTemplate> template_;
  std::string template_error_, load_error_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace portllm::server
