// POST /v1/completions: raw text completion of one or several prompts (strings or token ids),
// each with n samples; choices are numbered prompt_index * n + sample.
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "server/http_response.h"
#include "server/openai_protocol.h"
#include "server/routes.h"
#include "tokenizer/tokenizer.h"

namespace portllm::server {

std::string make_response_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), uint32_t(rng()));
}

std::string token_text(const Engine& engine, int32_t id) {
  const int32_t one[1] = {id};
  return engine.tokenizer().decode(one, false);
}

namespace {

struct CompletionChoice {
  std::string text;
  std::string finish_reason;
  std::string stop_reason;
  std::string error;
  int completion_tokens = 0;
  Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(), text_offset = Json::array();
  size_t offset = 0;
};

// Completions logprobs layout: parallel arrays over the generated tokens.
Json logprobs_delta(const Engine& engine, const RequestOutput& o, size_t& offset) {
  Json tokens = Json::array(), lps = Json::array(), tops = Json::array(), offs = Json::array();
  for (const TokenLogprob& lp : o.logprobs) {
    std::string t = token_text(engine, lp.id);
    tokens.push_back(t);
    lps.push_back(lp.logprob);
    Json top = Json::object();
    for (auto& [id, v] : lp.top) top[token_text(engine, id)] = v;
    tops.push_back(top);
    offs.push_back(offset);
    offset += t.size();
  }
  return Json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

std::string finish_name(const RequestOutput& o) {
  return o.finish_reason ? finish_reason_name(*o.finish_reason) : "stop";
}

void handle(ServerState& st, const httplib::Request& http_req, httplib::Response& res) {
  Json body = parse_body(http_req.body);
  auto engine = require_engine(st);
  const tok::Tokenizer& tok = engine->tokenizer();
  CompletionRequest req = parse_completion_request(body, tok.vocab_size());
  check_model(st, req.model);
  const std::string model = served_model_name(st);
  const int n = req.sampling.n;
  const bool want_logprobs = req.sampling.logprobs >= 0;

  // Tokenize and check every prompt before enqueueing any, so a bad one enqueues nothing.
  std::vector<RequestInput> inputs;
  std::vector<std::string> echo_text;
  int prompt_tokens = 0;
  for (const PromptInput& p : req.prompts) {
    RequestInput in;
    in.prompt_ids = p.is_text ? tok.encode(p.text, true) : p.ids;
    if (in.prompt_ids.empty()) throw bad_request("'prompt' encodes to no tokens", "prompt");
    in.params = req.sampling;
    in.params.max_tokens = resolve_max_tokens(int64_t(in.prompt_ids.size()), req.max_tokens, engine->max_model_len(), 16, "prompt");
    if (in.params.min_tokens > in.params.max_tokens) throw bad_request("'min_tokens' must not exceed max_tokens", "min_tokens");
    prompt_tokens += int(in.prompt_ids.size());
    if (req.echo) echo_text.push_back(p.is_text ? p.text : tok.decode(in.prompt_ids, false));
    inputs.push_back(std::move(in));
  }
  auto run = std::make_shared<GenerationRun>(engine, st.metrics);
  for (size_t i = 0; i < inputs.size(); ++i) run->add(std::move(inputs[i]), int(i) * n);

  const std::string id = make_response_id("cmpl-");
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto choices = std::make_shared<std::vector<CompletionChoice>>(req.prompts.size() * n);
  auto usage = [choices, prompt_tokens] {
    int completion = 0;
    for (auto& c : *choices) completion += c.completion_tokens;
    return Json{{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion}, {"total_tokens", prompt_tokens + completion}};
  };

  if (!req.stream) {
    if (req.echo)
      for (size_t c = 0; c < choices->size(); ++c) (*choices)[c].text = echo_text[c / n];
    auto consume = [choices, engine, want_logprobs](const ChoiceOutput& co) {
      CompletionChoice& c = (*choices)[co.choice];
      const RequestOutput& o = co.out;
      c.text += o.text;
      c.completion_tokens = o.completion_tokens;
      if (want_logprobs) {
        Json d = logprobs_delta(*engine, o, c.offset);
        for (auto& v : d["tokens"]) c.tokens.push_back(v);
        for (auto& v : d["token_logprobs"]) c.token_logprobs.push_back(v);
        for (auto& v : d["top_logprobs"]) c.top_logprobs.push_back(v);
        for (auto& v : d["text_offset"]) c.text_offset.push_back(v);
      }
      if (o.finished) {
        c.finish_reason = finish_name(o);
        c.stop_reason = o.stop_reason;
        c.error = o.error;
      }
    };
    auto build = [choices, id, created, model, want_logprobs, usage]() -> Json {
      Json arr = Json::array();
      for (size_t i = 0; i < choices->size(); ++i) {
        CompletionChoice& c = (*choices)[i];
        if (!c.error.empty()) return error_body("generation failed: " + c.error, "internal_error", "", "");
        Json lp = want_logprobs ? Json{{"tokens", c.tokens}, {"token_logprobs", c.token_logprobs}, {"top_logprobs", c.top_logprobs}, {"text_offset", c.text_offset}} : Json(nullptr);
        arr.push_back(Json{{"index", i}, {"text", c.text}, {"logprobs", lp}, {"finish_reason", c.finish_reason},
                           {"stop_reason", c.stop_reason.empty() ? Json(nullptr) : Json(c.stop_reason)}});
      }
      return Json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}, {"choices", arr}, {"usage", usage()}};
    };
    deliver_json(res, run, consume, build);
    return;
  }

  auto chunk = [id, created, model](Json choice) {
    return Json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}, {"choices", Json::array({std::move(choice)})}};
  };
  auto echoed = std::make_shared<std::vector<bool>>(choices->size(), !req.echo);
  auto on_output = [choices, engine, want_logprobs, chunk, echoed, echo_text, n](const ChoiceOutput& co, std::string& out) {
    CompletionChoice& c = (*choices)[co.choice];
    const RequestOutput& o = co.out;
    c.completion_tokens = o.completion_tokens;
    if (o.finish_reason == FinishReason::Error) {
      c.error = o.error.empty() ? "engine error" : o.error;
      return;
    }
    std::string text = o.text;
    if (!(*echoed)[co.choice]) {
      text = echo_text[co.choice / n] + text;
      (*echoed)[co.choice] = true;
    }
    if (text.empty() && !o.finished && o.logprobs.empty()) return;
    Json choice{{"index", co.choice}, {"text", text},
                {"logprobs", want_logprobs ? logprobs_delta(*engine, o, c.offset) : Json(nullptr)},
                {"finish_reason", o.finished ? Json(finish_name(o)) : Json(nullptr)}};
    if (o.finished) choice["stop_reason"] = o.stop_reason.empty() ? Json(nullptr) : Json(o.stop_reason);
    out += sse_event(chunk(std::move(choice)));
  };
  const bool include_usage = req.include_usage;
  auto on_end = [choices, include_usage, usage, id, created, model](std::string& out) {
    append_stream_end(out, *choices, include_usage, [&] {
      return Json{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}, {"choices", Json::array()}, {"usage", usage()}};
    });
  };
  deliver_stream(res, run, on_output, on_end);
}

}  // namespace

void register_completion_routes(httplib::Server& http, ServerState& st) {
  http.Post("/v1/completions", [&st](const httplib::Request& req, httplib::Response& res) {
    guarded(st, res, [&] { handle(st, req, res); });
  });
}

}  // namespace portllm::server
