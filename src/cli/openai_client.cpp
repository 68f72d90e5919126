#include "cli/openai_client.h"

#include <chrono>

#include <fmt/format.h>
#include <httplib.h>

namespace portllm::cli {

namespace {
using Clock = std::chrono::steady_clock;

httplib::Headers auth_headers(const ServerAddress& addr) {
  httplib::Headers h;
  if (!addr.api_key.empty()) h.emplace("Authorization", "Bearer " + addr.api_key);
  return h;
}

std::string error_message(int status, const std::string& body) {
  try {
    auto j = nlohmann::json::parse(body);
    if (j.contains("error") && j["error"].is_object() && j["error"].contains("message"))
      return "HTTP " + std::to_string(status) + ": " + j["error"]["message"].get<std::string>();
  } catch (...) {
  }
  return "HTTP " + std::to_string(status) + ": " + body.substr(0, 200);
}
}  // namespace

CompletionResult post_completion(const ServerAddress& addr, const std::string& path, const nlohmann::json& body, int timeout_s) {
  CompletionResult r;
  httplib::Client cli(addr.host, addr.port);
  cli.set_connection_timeout(10);
  cli.set_read_timeout(timeout_s);
  cli.set_write_timeout(60);
  const bool stream = body.value("stream", false);
  const auto t0 = Clock::now();
  auto secs = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };

  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.headers = auth_headers(addr);
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  std::string raw, pending;
  Clock::time_point last;
  bool first = true;
  std::string stream_error;
  int status = 0;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  size_t received = 0;
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    received += len;
    if (!stream || status != 200) {
      raw.append(data, len);
      return true;
    }
    pending.append(data, len);
    size_t pos;
    while ((pos = pending.find("\n\n")) != std::string::npos) {
      std::string ev = pending.substr(0, pos);
      pending.erase(0, pos + 2);
      if (ev.rfind("data: ", 0) != 0) continue;  // comments (keep-alive), other fields
      std::string payload = ev.substr(6);
      if (payload == "[DONE]") continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(payload);
      } catch (...) {
        stream_error = "invalid SSE payload";
        continue;
      }
      if (j.contains("error")) {
        stream_error = j["error"].value("message", "error event");
        continue;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        r.prompt_tokens = j["usage"].value("prompt_tokens", 0);
        r.completion_tokens = j["usage"].value("completion_tokens", 0);
      }
      if (!j.contains("choices") || j["choices"].empty()) continue;
      const auto& c = j["choices"][0];
      std::string text = c.contains("text") && c["text"].is_string() ? c["text"].get<std::string>()
                         : (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string()) ? c["delta"]["content"].get<std::string>() : "";
      if (text.empty()) continue;
      const auto now = Clock::now();
      if (first) {
        r.ttft = secs(now);
        first = false;
      } else {
        r.itl.push_back(std::chrono::duration<double>(now - last).count());
      }
      last = now;
      r.text += text;
    }
    return true;
  };
  auto res = cli.send(req);
  r.latency = secs(Clock::now());
  if (!res) {
    // How far the response got tells a refused or dropped connection from a stream cut short.
    r.error = fmt::format("request failed: {} ({} after {:.1f} s, {} response bytes, {} tokens of text)",
                          httplib::to_string(res.error()), status ? fmt::format("HTTP {}", status) : "no status",
                          r.latency, received, r.itl.size() + (first ? 0 : 1));
    return r;
  }
  if (res->status != 200) {
    r.error = error_message(res->status, raw);
    return r;
  }
  if (stream) {
    if (!stream_error.empty()) {
      r.error = stream_error;
      return r;
    }
    r.ok = true;
    return r;
  }
  try {
    auto j = nlohmann::json::parse(raw);
    const auto& c = j["choices"][0];
    r.text = c.contains("text") ? c["text"].get<std::string>() : c["message"]["content"].get<std::string>();
    if (j.contains("usage")) {
      r.prompt_tokens = j["usage"].value("prompt_tokens", 0);
      r.completion_tokens = j["usage"].value("completion_tokens", 0);
    }
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = std::string("unexpected response: ") + e.what();
  }
  return r;
}

std::string first_model_id(const ServerAddress& addr) {
  httplib::Client cli(addr.host, addr.port);
  cli.set_connection_timeout(10);
  auto res = cli.Get("/v1/models", auth_headers(addr));
  if (!res || res->status != 200) return {};
  try {
    auto j = nlohmann::json::parse(res->body);
    return j["data"][0]["id"].get<std::string>();
  } catch (...) {
    return {};
  }
}

}  // namespace portllm::cli
