// GET /health, GET /v1/models, GET /metrics, POST /tokenize, POST /detokenize.
#include <chrono>

#include "server/http_response.h"
#include "server/openai_protocol.h"
#include "server/routes.h"
#include "tokenizer/tokenizer.h"

namespace portllm::server {

namespace {

void tokenize(ServerState& st, const httplib::Request& http_req, httplib::Response& res) {
  Json body = parse_body(http_req.body);
  auto engine = require_engine(st);
  const tok::Tokenizer& tok = engine->tokenizer();
  if (body.contains("model") && body["model"].is_string()) check_model(st, body["model"].get<std::string>());
  bool add_special = true;
  if (body.contains("add_special_tokens")) {
    if (!body["add_special_tokens"].is_boolean()) throw bad_request("'add_special_tokens' must be a boolean", "add_special_tokens");
    add_special = body["add_special_tokens"].get<bool>();
  }
  std::string text;
  if (body.contains("prompt")) {
    if (!body["prompt"].is_string()) throw bad_request("'prompt' must be a string", "prompt");
    text = body["prompt"].get<std::string>();
  } else if (body.contains("messages")) {
    // Same rendering as /v1/chat/completions (vLLM's /tokenize accepts both forms).
    Json chat = body;
    chat.erase("add_special_tokens");
    ChatRequest cr = parse_chat_request(chat, tok.vocab_size());
    auto tmpl = st.chat_template();
    if (!tmpl) throw bad_request(st.template_error(), "messages");
    Json kwargs = cr.chat_template_kwargs;
    kwargs["add_generation_prompt"] = cr.add_generation_prompt;
    if (!cr.tools.is_null()) kwargs["tools"] = cr.tools;
    text = tmpl->render(cr.messages, kwargs);
    if (!body.contains("add_special_tokens")) add_special = false;
  } else {
    throw bad_request("'prompt' (a string) or 'messages' is required", "prompt");
  }
  std::vector<int32_t> ids = tok.encode(text, add_special);
  respond_json(res, 200, Json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", engine->max_model_len()}});
}

void detokenize(ServerState& st, const httplib::Request& http_req, httplib::Response& res) {
  Json body = parse_body(http_req.body);
  auto engine = require_engine(st);
  const tok::Tokenizer& tok = engine->tokenizer();
  if (!body.contains("tokens") || !body["tokens"].is_array()) throw bad_request("'tokens' must be an array of token ids", "tokens");
  std::vector<int32_t> ids;
  for (const Json& v : body["tokens"]) {
    if (!v.is_number_integer()) throw bad_request("'tokens' must contain integer token ids", "tokens");
    int64_t id = v.get<int64_t>();
    if (id < 0 || id >= tok.vocab_size()) throw bad_request("'tokens': token id " + std::to_string(id) + " is outside the vocabulary", "tokens");
    ids.push_back(int32_t(id));
  }
  respond_json(res, 200, Json{{"prompt", tok.decode(ids, false)}});
}

}  // namespace

void register_info_routes(httplib::Server& http, ServerState& st) {
  // 503 until the model is loaded: the server listens first so orchestrators can wait on this.
  http.Get("/health", [&st](const httplib::Request&, httplib::Response& res) {
    if (st.shutting_down()) return respond_error(res, ApiError(503, "the server is shutting down", "service_unavailable"));
    if (st.engine()) {
      res.status = 200;
      res.set_content("", "text/plain");
      return;
    }
    std::string err = st.load_error();
    respond_error(res, ApiError(503, err.empty() ? "the model is loading" : "the model failed to load: " + err, "service_unavailable"));
  });
  http.Get("/v1/models", [&st](const httplib::Request&, httplib::Response& res) {
    guarded(st, res, [&] {
      auto engine = st.engine();
      Json m{{"id", served_model_name(st)}, {"object", "model"}, {"created", 0}, {"owned_by", "portllm"}, {"root", st.cfg.model_path}};
      if (engine) m["max_model_len"] = engine->max_model_len();
      respond_json(res, 200, Json{{"object", "list"}, {"data", Json::array({m})}});
    });
  });
  http.Get("/metrics", [&st](const httplib::Request&, httplib::Response& res) {
    auto engine = st.engine();
    std::optional<EngineStats> stats;
    if (engine) stats = engine->stats();
    res.set_content(st.metrics.render(stats ? &*stats : nullptr), "text/plain; version=0.0.4");
  });
  http.Post("/tokenize", [&st](const httplib::Request& req, httplib::Response& res) { guarded(st, res, [&] { tokenize(st, req, res); }); });
  http.Post("/detokenize", [&st](const httplib::Request& req, httplib::Response& res) { guarded(st, res, [&] { detokenize(st, req, res); }); });
}

}  // namespace portllm::server
