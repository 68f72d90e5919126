// A minimal client of OpenAI-compatible servers (ours, vLLM, SGLang) for `eval` and
// `bench serve`: one POST to /v1/completions, non-streaming or streaming with per-chunk timing.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::cli {

struct ServerAddress {
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string api_key;
};

struct CompletionResult {
  bool ok = false;
  std::string error;           // HTTP status and server message when !ok
  std::string text;
  int prompt_tokens = 0, completion_tokens = 0;
  double latency = 0;          // seconds, request sent -> response complete
  double ttft = 0;             // streaming: seconds to the first chunk with text
  std::vector<double> itl;     // streaming: seconds between consecutive text chunks
};

// POST `path` with `body`. When body["stream"] is true the SSE chunks are timed (the usage chunk,
// requested with stream_options.include_usage, gives the token counts).
CompletionResult post_completion(const ServerAddress& addr, const std::string& path, const nlohmann::json& body,
                                 int timeout_s = 3600);

// GET /v1/models -> the first model id (empty on failure).
std::string first_model_id(const ServerAddress& addr);

}  // namespace portllm::cli
