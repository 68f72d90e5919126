// Route registration, one function per route file.
#pragma once
#include <httplib.h>

#include "server/server_state.h"

namespace portllm::server {

void register_completion_routes(httplib::Server& http, ServerState& st);  // POST /v1/completions
void register_chat_routes(httplib::Server& http, ServerState& st);        // POST /v1/chat/completions
// GET /health, /v1/models, /metrics; POST /tokenize, /detokenize
void register_info_routes(httplib::Server& http, ServerState& st);

// "cmpl-" / "chatcmpl-" + random hex: response ids.
std::string make_response_id(const char* prefix);
// Text of one token for logprob listings (special tokens included).
std::string token_text(const Engine& engine, int32_t id);

}  // namespace portllm::server
