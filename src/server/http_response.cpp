#include "server/http_response.h"

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"

namespace portllm::server {

using namespace std::chrono_literals;

void respond_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void respond_error(httplib::Response& res, const ApiError& e) { respond_json(res, e.status, error_body(e)); }

void guarded(ServerState& st, httplib::Response& res, const std::function<void()>& fn) {
  try {
    fn();
    return;
  } catch (const ApiError& e) {
    respond_error(res, e);
    if (e.status < 500) st.metrics.client_errors++;
  } catch (const Error& e) {
    if (st.shutting_down()) {  // the engine refuses work once it stops: not the client's fault
      respond_error(res, ApiError(503, "the server is shutting down", "service_unavailable"));
      return;
    }
    // The engine validates what the server cannot (e.g. a request that can never fit the KV pool).
    respond_error(res, bad_request(e.what()));
    st.metrics.client_errors++;
  } catch (const std::exception& e) {
    respond_error(res, ApiError(500, fmt::format("internal error: {}", e.what()), "internal_error"));
  }
}

std::shared_ptr<Engine> require_engine(ServerState& st) {
  if (st.shutting_down()) throw ApiError(503, "the server is shutting down", "service_unavailable");
  auto e = st.engine();
  if (e) return e;
  std::string err = st.load_error();
  if (!err.empty()) throw ApiError(503, "the model failed to load: " + err, "service_unavailable");
  throw ApiError(503, "the model is still loading", "service_unavailable");
}

std::string served_model_name(const ServerState& st) {
  if (!st.cfg.served_model_name.empty()) return st.cfg.served_model_name;
  std::filesystem::path p(st.cfg.model_path);
  std::string name = p.filename().string();
  if (name.empty()) name = p.parent_path().filename().string();
  return name.empty() ? std::string("portllm") : name;
}

void check_model(const ServerState& st, const std::string& requested) {
  if (requested.empty()) return;
  const std::string name = served_model_name(st);
  if (requested != name && requested != st.cfg.model_path)
    throw ApiError(404, fmt::format("The model '{}' does not exist (this server serves '{}')", requested, name),
                   "invalid_request_error", "model", "model_not_found");
}

std::string sse_event(const Json& j) { return "data: " + dump_json(j) + "\n\n"; }

void deliver_json(httplib::Response& res, std::shared_ptr<GenerationRun> run,
                  std::function<void(const ChoiceOutput&)> consume, std::function<Json()> build) {
  const auto deadline = std::chrono::steady_clock::now() + 1s;
  while (!run->done() && std::chrono::steady_clock::now() < deadline)
    for (auto& o : run->wait(100ms)) consume(o);
  if (run->done()) {
    Json body = build();
    respond_json(res, body.contains("error") ? 500 : 200, body);
    return;
  }
  res.status = 200;
  res.set_chunked_content_provider(
      "application/json",
      [run, consume, build](size_t, httplib::DataSink& sink) {
        const auto until = std::chrono::steady_clock::now() + 1s;
        while (!run->done() && std::chrono::steady_clock::now() < until)
          for (auto& o : run->wait(100ms)) consume(o);
        if (!run->done()) return sink.write(" ", 1);
        std::string body = dump_json(build());
        if (!sink.write(body.data(), body.size())) return false;
        sink.done();
        return true;
      },
      [run](bool success) {
        if (!success) run->abort();
      });
}

void deliver_stream(httplib::Response& res, std::shared_ptr<GenerationRun> run,
                    std::function<void(const ChoiceOutput&, std::string& out)> on_output,
                    std::function<void(std::string& out)> on_end) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto silent_since = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  res.set_chunked_content_provider(
      "text/event-stream",
      [run, on_output, on_end, silent_since](size_t, httplib::DataSink& sink) {
        std::string out;
        bool done = false;
        try {
          for (auto& o : run->wait(500ms)) on_output(o, out);
          done = run->done();
          if (done) on_end(out);
        } catch (const std::exception& e) {
          // A failure while formatting ends the stream with an error event, not a cut connection.
          std::fprintf(stderr, "portllm serve: stream failed: %s\n", e.what());
          out = sse_event(error_body(fmt::format("internal error: {}", e.what()), "internal_error", "", ""));
          run->abort();
          done = true;
        }
        if (done) {
          out += sse_done();
        } else if (out.empty() && std::chrono::steady_clock::now() - *silent_since > 2s) {
          out = ": keep-alive\n\n";  // an SSE comment: probes the connection while queued
        }
        if (!out.empty()) {
          *silent_since = std::chrono::steady_clock::now();
          if (!sink.write(out.data(), out.size())) return false;
        }
        if (done) sink.done();
        return true;
      },
      [run](bool success) {
        if (success) return;
        // The stream ended before data: [DONE] (the client went away or a write failed): say so,
        // since the client only sees a cut connection.
        std::fprintf(stderr, "portllm serve: a stream ended early (client gone or write failed; run %s)\n",
                     run->done() ? "finished" : "still generating, aborted");
        run->abort();
      });
}

}  // namespace portllm::server
