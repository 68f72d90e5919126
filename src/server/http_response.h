// Response helpers shared by the routes: JSON and error replies, the exception-to-status policy,
// and the two ways a generation is delivered (one JSON body, or an SSE stream).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include <httplib.h>

#include "server/api_error.h"
#include "server/generation_run.h"
#include "server/server_state.h"

namespace portllm::server {

void respond_json(httplib::Response& res, int status, const Json& body);
void respond_error(httplib::Response& res, const ApiError& e);

// Runs `fn`, turning ApiError into its status, portllm::Error (the engine rejected the input)
// into 400, and anything else into 500 — always with the OpenAI error envelope.
void guarded(ServerState& st, httplib::Response& res, const std::function<void()>& fn);

// The engine, or ApiError 503 while the model loads (or failed to load).
std::shared_ptr<Engine> require_engine(ServerState& st);
// 404 when the request names a model this server does not serve.
void check_model(const ServerState& st, const std::string& requested);
std::string served_model_name(const ServerState& st);

// Events for an SSE stream: "data: <json>\n\n" and the final "data: [DONE]\n\n".
std::string sse_event(const Json& j);

// The events that close a stream: an error event when any choice failed, else the usage chunk
// (built by `usage_chunk()`) when the client asked for it. Shared by chat and completions.
template <class Choices, class UsageChunk>
void append_stream_end(std::string& out, const Choices& choices, bool include_usage, const UsageChunk& usage_chunk) {
  for (const auto& c : choices)
    if (!c.error.empty()) {
      out += sse_event(error_body("generation failed: " + c.error, "internal_error", "", ""));
      return;
    }
  if (include_usage) out += sse_event(usage_chunk());
}
inline const char* sse_done() { return "data: [DONE]\n\n"; }

// Non-streaming delivery. `consume` sees every output; `build` makes the reply once all samples
// finished. A run still going after a second switches to a chunked body that writes a space
// (JSON allows leading whitespace) every second, so a client that disconnected is noticed by a
// failing write and its request aborted.
void deliver_json(httplib::Response& res, std::shared_ptr<GenerationRun> run,
                  std::function<void(const ChoiceOutput&)> consume, std::function<Json()> build);

// Streaming delivery. `on_output` appends the SSE events of one output to `out`; `on_end` appends
// the closing events (usage, errors); "data: [DONE]" is written last. A failed write (client gone)
// aborts the run.
void deliver_stream(httplib::Response& res, std::shared_ptr<GenerationRun> run,
                    std::function<void(const ChoiceOutput&, std::string& out)> on_output,
                    std::function<void(std::string& out)> on_end);

}  // namespace portllm::server
