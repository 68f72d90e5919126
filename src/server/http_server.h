// The HTTP server: cpp-httplib with a thread pool, the OpenAI routes, API-key check, request size
// limit and the error envelope for every failure (unknown route, oversized body, ...).
// It listens before the model is loaded (/health answers 503 until set_engine()).
#pragma once
#include <memory>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "server/server_config.h"

namespace httplib {
class Server;
}

namespace portllm::server {

struct ServerState;

class HttpServer {
 public:
  explicit HttpServer(ServerConfig cfg);
  ~HttpServer();

  // Binds host:port (port 0: any free port); throws portllm::Error when it cannot.
  void bind();
  int port() const { return port_; }
  // Serves on a background thread until stop().
  void start();
  // Serves on the calling thread until stop().
  void run();
  void stop();

  void set_engine(std::shared_ptr<Engine> engine);
  void set_load_error(const std::string& msg);
  void set_shutting_down();  // from now on: 503 for new requests and /health

 private:
  std::unique_ptr<ServerState> st_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

// Constant-time comparison of an API key (time does not depend on where the strings differ).
bool api_key_matches(const std::string& presented, const std::string& expected);

}  // namespace portllm::server
