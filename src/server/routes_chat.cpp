// POST /v1/chat/completions: renders the messages with the chat template, generates, and splits
// the output into reasoning_content (<think> blocks), content and tool_calls.
#include <chrono>

#include <fmt/format.h>

#include "core/error.h"
#include "server/http_response.h"
#include "server/openai_protocol.h"
#include "server/reasoning_parser.h"
#include "server/routes.h"
#include "server/tool_parser.h"
#include "tokenizer/tokenizer.h"

namespace portllm::server {

namespace {

struct ChatChoice {
  std::unique_ptr<ReasoningParser> reasoning;
  std::unique_ptr<ToolParser> tools;
  std::string content, reasoning_text, finish_reason, error;
  std::vector<ToolCall> calls;
  Json logprobs = Json::array();
  int completion_tokens = 0;
  bool role_sent = false;
};

struct Delta {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
};

// Runs one output's text through the reasoning and tool parsers.
Delta parse_output(ChatChoice& c, const RequestOutput& o) {
  Delta d;
  ReasoningParser::Delta r;
  if (c.reasoning) {
    r = c.reasoning->push(o.text);
    if (o.finished) {
      auto f = c.reasoning->finish();
      r.reasoning += f.reasoning;
      r.content += f.content;
    }
  } else {
    r.content = o.text;
  }
  d.reasoning = std::move(r.reasoning);
  if (c.tools) {
    d.content = c.tools->push(r.content);
    if (o.finished) {
      auto f = c.tools->finish();
      d.content += f.content;
      d.calls = std::move(f.calls);
    }
  } else {
    d.content = std::move(r.content);
  }
  return d;
}

Json bytes_of(const std::string& s) {
  Json b = Json::array();
  for (unsigned char ch : s) b.push_back(int(ch));
  return b;
}

Json logprob_entries(const Engine& engine, const RequestOutput& o) {
  Json arr = Json::array();
  for (const TokenLogprob& lp : o.logprobs) {
    std::string t = token_text(engine, lp.id);
    Json top = Json::array();
    for (auto& [id, v] : lp.top) {
      std::string tt = token_text(engine, id);
      top.push_back(Json{{"token", tt}, {"logprob", v}, {"bytes", bytes_of(tt)}});
    }
    arr.push_back(Json{{"token", t}, {"logprob", lp.logprob}, {"bytes", bytes_of(t)}, {"top_logprobs", top}});
  }
  return arr;
}

Json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  Json arr = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json c{{"id", make_tool_call_id()}, {"type", "function"}, {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (with_index) c["index"] = i;
    arr.push_back(std::move(c));
  }
  return arr;
}

std::string finish_name(const RequestOutput& o, bool has_calls) {
  if (has_calls && o.finish_reason != FinishReason::Abort) return "tool_calls";
  return o.finish_reason ? finish_reason_name(*o.finish_reason) : "stop";
}

void handle(ServerState& st, const httplib::Request& http_req, httplib::Response& res) {
  Json body = parse_body(http_req.body);
  auto engine = require_engine(st);
  const tok::Tokenizer& tok = engine->tokenizer();
  ChatRequest req = parse_chat_request(body, tok.vocab_size());
  check_model(st, req.model);
  auto tmpl = st.chat_template();
  if (!tmpl) throw bad_request(st.template_error(), "messages");
  const std::string model = served_model_name(st);

  // tool_choice none hides the tools from the model (as vLLM does); required/named force a call
  // by ending the prompt with the opening of one.
  const bool use_tools = !req.tools.is_null() && req.tool_choice != ToolChoice::None && !st.tool_parser.empty();
  Json kwargs = req.chat_template_kwargs;
  kwargs["add_generation_prompt"] = req.add_generation_prompt;
  if (use_tools) kwargs["tools"] = req.tools;
  std::string prompt;
  try {
    prompt = tmpl->render(req.messages, kwargs);
  } catch (const Error& e) {
    throw bad_request(fmt::format("the chat template failed on these messages: {}", e.what()), "messages");
  }
  std::string forced;
  const bool forcing = use_tools && (req.tool_choice == ToolChoice::Required || req.tool_choice == ToolChoice::Named);
  if (forcing) forced = make_tool_parser(st.tool_parser)->forced_prefix(req.tool_choice == ToolChoice::Named ? req.tool_choice_name : "");
  prompt += forced;
  const bool in_reasoning = st.reasoning && !forcing && ReasoningParser::prompt_ends_in_reasoning(prompt);

  RequestInput in;
  in.prompt_ids = tok.encode(prompt, false);  // the template already wrote BOS and friends
  if (in.prompt_ids.empty()) throw bad_request("the rendered chat prompt is empty", "messages");
  in.params = req.sampling;
  in.params.max_tokens = resolve_max_tokens(int64_t(in.prompt_ids.size()), req.max_tokens, engine->max_model_len(),
                                            engine->max_model_len(), "messages");
  if (in.params.min_tokens > in.params.max_tokens) throw bad_request("'min_tokens' must not exceed max_tokens", "min_tokens");
  const int prompt_tokens = int(in.prompt_ids.size());
  const int n = req.sampling.n;

  auto choices = std::make_shared<std::vector<ChatChoice>>(n);
  for (auto& c : *choices) {
    if (st.reasoning && !forcing) c.reasoning = std::make_unique<ReasoningParser>(in_reasoning);
    if (use_tools) {
      c.tools = make_tool_parser(st.tool_parser, req.tools);
      c.tools->push(forced);
    }
  }
  auto run = std::make_shared<GenerationRun>(engine, st.metrics);
  run->add(std::move(in), 0);

  const std::string id = make_response_id("chatcmpl-");
  const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const bool want_logprobs = req.logprobs;
  auto usage = [choices, prompt_tokens] {
    int completion = 0;
    for (auto& c : *choices) completion += c.completion_tokens;
    return Json{{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion}, {"total_tokens", prompt_tokens + completion}};
  };

  if (!req.stream) {
    auto consume = [choices, engine, want_logprobs](const ChoiceOutput& co) {
      ChatChoice& c = (*choices)[co.choice];
      const RequestOutput& o = co.out;
      c.completion_tokens = o.completion_tokens;
      Delta d = parse_output(c, o);
      c.reasoning_text += d.reasoning;
      c.content += d.content;
      for (auto& call : d.calls) c.calls.push_back(std::move(call));
      if (want_logprobs)
        for (auto& e : logprob_entries(*engine, o)) c.logprobs.push_back(e);
      if (o.finished) {
        c.finish_reason = finish_name(o, !c.calls.empty());
        c.error = o.error;
        if (o.finish_reason == FinishReason::Error && c.error.empty()) c.error = "engine error";
      }
    };
    auto build = [choices, id, created, model, want_logprobs, usage]() -> Json {
      Json arr = Json::array();
      for (size_t i = 0; i < choices->size(); ++i) {
        ChatChoice& c = (*choices)[i];
        if (!c.error.empty()) return error_body("generation failed: " + c.error, "internal_error", "", "");
        Json msg{{"role", "assistant"}, {"content", c.content.empty() && !c.calls.empty() ? Json(nullptr) : Json(c.content)}};
        if (c.reasoning) msg["reasoning_content"] = c.reasoning_text.empty() ? Json(nullptr) : Json(c.reasoning_text);
        if (!c.calls.empty()) msg["tool_calls"] = tool_calls_json(c.calls, false);
        arr.push_back(Json{{"index", i}, {"message", msg}, {"logprobs", want_logprobs ? Json{{"content", c.logprobs}} : Json(nullptr)},
                           {"finish_reason", c.finish_reason}});
      }
      return Json{{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model}, {"choices", arr}, {"usage", usage()}};
    };
    deliver_json(res, run, consume, build);
    return;
  }

  auto chunk = [id, created, model](Json choice) {
    return Json{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model}, {"choices", Json::array({std::move(choice)})}};
  };
  auto on_output = [choices, engine, want_logprobs, chunk](const ChoiceOutput& co, std::string& out) {
    ChatChoice& c = (*choices)[co.choice];
    const RequestOutput& o = co.out;
    c.completion_tokens = o.completion_tokens;
    if (o.finish_reason == FinishReason::Error) {
      c.error = o.error.empty() ? "engine error" : o.error;
      return;
    }
    if (!c.role_sent) {
      c.role_sent = true;
      out += sse_event(chunk(Json{{"index", co.choice}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    }
    Delta d = parse_output(c, o);
    Json lp = want_logprobs && !o.logprobs.empty() ? Json{{"content", logprob_entries(*engine, o)}} : Json(nullptr);
    if (!d.reasoning.empty() || !d.content.empty() || !lp.is_null()) {
      Json delta = Json::object();
      if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
      if (!d.content.empty() || d.reasoning.empty()) delta["content"] = d.content;
      out += sse_event(chunk(Json{{"index", co.choice}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", nullptr}}));
    }
    if (!d.calls.empty())
      out += sse_event(chunk(Json{{"index", co.choice}, {"delta", {{"tool_calls", tool_calls_json(d.calls, true)}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    if (o.finished)
      out += sse_event(chunk(Json{{"index", co.choice}, {"delta", Json::object()}, {"logprobs", nullptr}, {"finish_reason", finish_name(o, !d.calls.empty())}}));
  };
  const bool include_usage = req.include_usage;
  auto on_end = [choices, include_usage, usage, id, created, model](std::string& out) {
    append_stream_end(out, *choices, include_usage, [&] {
      return Json{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model}, {"choices", Json::array()}, {"usage", usage()}};
    });
  };
  deliver_stream(res, run, on_output, on_end);
}

}  // namespace

void register_chat_routes(httplib::Server& http, ServerState& st) {
  http.Post("/v1/chat/completions", [&st](const httplib::Request& req, httplib::Response& res) {
    guarded(st, res, [&] { handle(st, req, res); });
  });
}

}  // namespace portllm::server
