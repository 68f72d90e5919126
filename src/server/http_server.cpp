#include "server/http_server.h"

#include <httplib.h>

#include <fmt/format.h>

#include "core/error.h"
#include "server/connection_threads.h"
#include "server/http_response.h"
#include "server/listen_backlog.h"
#include "server/routes.h"
#include "server/server_state.h"

namespace portllm::server {

bool api_key_matches(const std::string& presented, const std::string& expected) {
  unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  const size_t n = expected.size();
  for (size_t i = 0; i < n; ++i) {
    unsigned char a = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff |= static_cast<unsigned char>(a ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

namespace {
// Routes behind the API key: everything but the probes (/health for orchestrators, /metrics for
// Prometheus), as in vLLM.
bool needs_auth(const std::string& path) { return path != "/health" && path != "/metrics"; }
}  // namespace

HttpServer::HttpServer(ServerConfig cfg) : st_(std::make_unique<ServerState>()), http_(std::make_unique<httplib::Server>()) {
  st_->cfg = std::move(cfg);
  ServerState& st = *st_;
  // A thread per connection being served, made on demand (connection_threads.h): 8 stay, the
  // others end after 30 s without a connection.
  const size_t threads = size_t(std::max(4, st.cfg.http_threads));
  http_->new_task_queue = [threads] { return new ConnectionThreads(threads, 8, std::chrono::seconds(30)); };
  // httplib enforces the limit on bodies without Content-Length too; its 413 gets our envelope
  // from the error handler below.
  http_->set_payload_max_length(st.cfg.max_request_bytes);
  http_->set_read_timeout(60);
  http_->set_write_timeout(60);
  http_->set_keep_alive_timeout(30);
  http_->set_pre_routing_handler([&st](const httplib::Request& req, httplib::Response& res) {
    if (req.has_header("Content-Length")) {
      uint64_t len = 0;
      try {
        len = std::stoull(req.get_header_value("Content-Length"));
      } catch (...) {
      }
      if (len > st.cfg.max_request_bytes) {
        respond_error(res, ApiError(413, fmt::format("the request body ({} bytes) exceeds --max-request-bytes ({})", len, st.cfg.max_request_bytes),
                                    "invalid_request_error", "", "request_too_large"));
        res.set_header("Connection", "close");
        st.metrics.client_errors++;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!st.cfg.api_key.empty() && needs_auth(req.path)) {
      std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      std::string key = auth.rfind(prefix, 0) == 0 ? auth.substr(prefix.size()) : req.get_header_value("X-Api-Key");
      if (!api_key_matches(key, st.cfg.api_key)) {
        respond_error(res, ApiError(401, auth.empty() && key.empty() ? "missing API key (Authorization: Bearer <key>)" : "invalid API key",
                                    "invalid_request_error", "", "invalid_api_key"));
        st.metrics.client_errors++;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Failures that no route produced (unknown path, wrong method, oversized chunked body, ...).
  http_->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string msg = res.status == 404 ? fmt::format("no route {} {}", req.method, req.path)
                      : res.status == 413 ? "the request body exceeds --max-request-bytes"
                                          : fmt::format("HTTP error {}", res.status);
    respond_json(res, res.status, error_body(msg, res.status == 404 ? "not_found_error" : "invalid_request_error", "",
                                             res.status == 413 ? "request_too_large" : ""));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg += std::string(": ") + e.what();
    } catch (...) {
    }
    respond_json(res, 500, error_body(msg, "internal_error", "", ""));
  });
  register_info_routes(*http_, st);
  register_completion_routes(*http_, st);
  register_chat_routes(*http_, st);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::bind() {
  const auto& cfg = st_->cfg;
  if (cfg.port == 0) {
    port_ = http_->bind_to_any_port(cfg.host);
    if (port_ <= 0) PL_THROW("cannot listen on {} (any port)", cfg.host);
  } else {
    if (!http_->bind_to_port(cfg.host, cfg.port)) PL_THROW("cannot listen on {}:{} (address in use or not available)", cfg.host, cfg.port);
    port_ = cfg.port;
  }
  deepen_listen_backlog(port_);  // past the packaged httplib's 5 (listen_backlog.h)
}

void HttpServer::start() {
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  while (!http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void HttpServer::run() { http_->listen_after_bind(); }

void HttpServer::stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpServer::set_engine(std::shared_ptr<Engine> engine) { st_->set_engine(std::move(engine)); }
void HttpServer::set_load_error(const std::string& msg) { st_->set_load_error(msg); }
void HttpServer::set_shutting_down() { st_->set_shutting_down(); }

}  // namespace portllm::server
