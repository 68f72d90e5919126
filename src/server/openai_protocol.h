// Request bodies of /v1/completions and /v1/chat/completions: parsing and validation into plain
// structs. Every client mistake (wrong type, out-of-range value, unknown token id, empty prompt)
// throws ApiError 400 naming the field; nothing here touches the engine, so it is unit-tested
// without a model. Checks that need the tokenized prompt (context length) live in the routes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/api_error.h"

namespace portllm::server {

// Fields shared by both endpoints (the sampler fields map 1:1 to SamplingParams).
struct CommonRequest {
  std::string model;                   // empty: the served model
  SamplingParams sampling;
  std::optional<int> max_tokens;       // max_completion_tokens, else max_tokens; unset: default
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
};

struct PromptInput {
  bool is_text = true;
  std::string text;
  std::vector<int32_t> ids;
};

struct CompletionRequest : CommonRequest {
  std::vector<PromptInput> prompts;    // one engine request each (each with sampling.n samples)
  bool echo = false;
};

enum class ToolChoice { None, Auto, Required, Named };

struct ChatRequest : CommonRequest {
  Json messages;                       // normalized: content parts joined into a string
  Json tools;                          // null or a non-empty array of {"type":"function",...}
  ToolChoice tool_choice = ToolChoice::Auto;
  std::string tool_choice_name;        // for ToolChoice::Named
  Json chat_template_kwargs = Json::object();
  bool add_generation_prompt = true;
  bool logprobs = false;               // chat: logprobs=true, top_logprobs=k -> sampling.logprobs=k
};

// vocab_size bounds token ids (prompt ids, stop_token_ids, logit_bias keys).
CompletionRequest parse_completion_request(const Json& body, int32_t vocab_size);
ChatRequest parse_chat_request(const Json& body, int32_t vocab_size);

// max_tokens against the context (vLLM's rules): 400 when the prompt alone fills the context or
// an explicit max_tokens does not fit after it; unset -> min(default_cap, what is left).
int resolve_max_tokens(int64_t prompt_len, std::optional<int> max_tokens, int64_t max_model_len,
                       int64_t default_cap, const char* prompt_param);

// The request's body must be a JSON object; throws 400 otherwise (also for invalid JSON).
Json parse_body(const std::string& body);

}  // namespace portllm::server
