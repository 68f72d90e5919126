#include "server/openai_protocol.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace portllm::server {

namespace {

// A field that is absent or null counts as unset (clients send null for "default").
const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

// obj is an object whose "type" is the string `type` (a "type" of another kind is no match,
// where nlohmann's value() would throw a type_error, a 500).
bool has_type(const Json& obj, const char* type) {
  if (!obj.is_object()) return false;
  auto it = obj.find("type");
  return it != obj.end() && it->is_string() && it->get<std::string>() == type;
}

bool get_bool(const Json& body, const char* name, bool def) {
  const Json* v = field(body, name);
  if (!v) return def;
  if (!v->is_boolean()) throw bad_request(fmt::format("'{}' must be a boolean", name), name);
  return v->get<bool>();
}

std::optional<int64_t> get_int(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  // 3.0 is accepted as 3 (JSON has one number type); 3.5 is not.
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return int64_t(d);
  }
  throw bad_request(fmt::format("'{}' must be an integer", name), name);
}

std::optional<double> get_number(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw bad_request(fmt::format("'{}' must be a number", name), name);
  double d = v->get<double>();
  if (!std::isfinite(d)) throw bad_request(fmt::format("'{}' must be finite", name), name);
  return d;
}

std::optional<std::string> get_string(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw bad_request(fmt::format("'{}' must be a string", name), name);
  return v->get<std::string>();
}

void check_range(const char* name, double v, double lo, double hi, bool lo_open = false) {
  if (v < lo || v > hi || (lo_open && v == lo))
    throw bad_request(fmt::format("'{}' must be in {}{}, {}], got {}", name, lo_open ? "(" : "[", lo, hi, v), name);
}

int32_t token_id(const Json& v, int32_t vocab_size, const char* name) {
  if (!v.is_number_integer()) throw bad_request(fmt::format("'{}' must contain integer token ids", name), name);
  int64_t id = v.get<int64_t>();
  if (id < 0 || id >= vocab_size)
    throw bad_request(fmt::format("'{}': token id {} is outside the vocabulary (0..{})", name, id, vocab_size - 1), name);
  return int32_t(id);
}

void parse_common(const Json& body, int32_t vocab_size, CommonRequest& r) {
  if (auto m = get_string(body, "model")) r.model = *m;
  SamplingParams& s = r.sampling;
  if (auto n = get_int(body, "n")) {
    if (*n < 1 || *n > 128) throw bad_request(fmt::format("'n' must be in [1, 128], got {}", *n), "n");
    s.n = int(*n);
  }
  if (auto t = get_number(body, "temperature")) { check_range("temperature", *t, 0, 100); s.temperature = float(*t); }
  if (auto p = get_number(body, "top_p")) { check_range("top_p", *p, 0, 1, true); s.top_p = float(*p); }
  if (auto k = get_int(body, "top_k")) {
    if (*k < -1) throw bad_request(fmt::format("'top_k' must be -1 (off) or >= 0, got {}", *k), "top_k");
    s.top_k = *k > std::numeric_limits<int>::max() ? 0 : int(*k);
  }
  if (auto p = get_number(body, "min_p")) { check_range("min_p", *p, 0, 1); s.min_p = float(*p); }
  if (auto p = get_number(body, "repetition_penalty")) {
    if (*p <= 0 || *p > 100) throw bad_request(fmt::format("'repetition_penalty' must be in (0, 100], got {}", *p), "repetition_penalty");
    s.repetition_penalty = float(*p);
  }
  if (auto p = get_number(body, "presence_penalty")) { check_range("presence_penalty", *p, -2, 2); s.presence_penalty = float(*p); }
  if (auto p = get_number(body, "frequency_penalty")) { check_range("frequency_penalty", *p, -2, 2); s.frequency_penalty = float(*p); }
  if (auto seed = get_int(body, "seed")) s.seed = uint64_t(*seed);

  std::optional<int64_t> mt = get_int(body, "max_completion_tokens");
  const char* mt_name = "max_completion_tokens";
  if (!mt) { mt = get_int(body, "max_tokens"); mt_name = "max_tokens"; }
  if (mt) {
    if (*mt < 1) throw bad_request(fmt::format("'{}' must be at least 1, got {}", mt_name, *mt), mt_name);
    r.max_tokens = int(std::min<int64_t>(*mt, std::numeric_limits<int>::max()));
  }
  if (auto m = get_int(body, "min_tokens")) {
    if (*m < 0) throw bad_request("'min_tokens' must be >= 0", "min_tokens");
    if (r.max_tokens && *m > *r.max_tokens) throw bad_request("'min_tokens' must not exceed max_tokens", "min_tokens");
    s.min_tokens = int(std::min<int64_t>(*m, std::numeric_limits<int>::max()));
  }
  s.ignore_eos = get_bool(body, "ignore_eos", false);
  s.skip_special_tokens = get_bool(body, "skip_special_tokens", true);

  if (const Json* stop = field(body, "stop")) {
    auto add = [&](const Json& v) {
      if (!v.is_string()) throw bad_request("'stop' must be a string or an array of strings", "stop");
      if (v.get<std::string>().empty()) throw bad_request("'stop' strings must not be empty", "stop");
      s.stop.push_back(v.get<std::string>());
    };
    if (stop->is_array()) {
      for (const Json& v : *stop) add(v);
    } else {
      add(*stop);
    }
  }
  if (const Json* ids = field(body, "stop_token_ids")) {
    if (!ids->is_array()) throw bad_request("'stop_token_ids' must be an array of token ids", "stop_token_ids");
    for (const Json& v : *ids) s.stop_token_ids.push_back(token_id(v, vocab_size, "stop_token_ids"));
  }
  if (const Json* lb = field(body, "logit_bias")) {
    if (!lb->is_object()) throw bad_request("'logit_bias' must be an object {token id: bias}", "logit_bias");
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      const std::string& key = it.key();
      size_t pos = 0;
      long long id = -1;
      try {
        id = std::stoll(key, &pos);
      } catch (...) {
        pos = 0;
      }
      if (key.empty() || pos != key.size())
        throw bad_request(fmt::format("'logit_bias' key '{}' is not a token id", key), "logit_bias");
      if (id < 0 || id >= vocab_size)
        throw bad_request(fmt::format("'logit_bias' key {} is outside the vocabulary (0..{})", id, vocab_size - 1), "logit_bias");
      if (!it.value().is_number()) throw bad_request("'logit_bias' values must be numbers", "logit_bias");
      double b = it.value().get<double>();
      if (!(b >= -100 && b <= 100)) throw bad_request(fmt::format("'logit_bias' value {} is outside [-100, 100]", b), "logit_bias");
      s.logit_bias[int32_t(id)] = float(b);
    }
  }
  r.stream = get_bool(body, "stream", false);
  if (const Json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw bad_request("'stream_options' must be an object", "stream_options");
    if (!r.stream) throw bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    r.include_usage = get_bool(*so, "include_usage", false);
  }
  if (const Json* rf = field(body, "response_format")) {
    if (!has_type(*rf, "text"))
      throw bad_request("'response_format' other than {\"type\": \"text\"} is not supported", "response_format");
  }
  if (field(body, "user") && !(*field(body, "user")).is_string()) throw bad_request("'user' must be a string", "user");
}

std::vector<int32_t> parse_id_list(const Json& arr, int32_t vocab_size) {
  if (arr.empty()) throw bad_request("'prompt' must not be empty", "prompt");
  std::vector<int32_t> ids;
  ids.reserve(arr.size());
  for (const Json& v : arr) ids.push_back(token_id(v, vocab_size, "prompt"));
  return ids;
}

// JSON text from the client (the body, a tool call's arguments) parsed, or a 400 naming `what`.
// nlohmann parses iteratively, but copies, dumps and the chat template's conversion recurse: a
// 32 MiB body of nested brackets would overflow a worker's stack. Real bodies (JSON schemas of
// tools included) nest a few dozen levels; Python's json, behind vLLM, stops near 1000.
Json parse_bounded(const std::string& text, const std::string& what, const std::string& param) {
  static constexpr int kMaxDepth = 512;
  auto depth_guard = [&](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) && depth >= kMaxDepth)
      throw bad_request(fmt::format("{} nests deeper than {} levels", what, kMaxDepth), param);
    return true;
  };
  try {
    return Json::parse(text, depth_guard);
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    throw bad_request(fmt::format("{} is not valid JSON: {}", what, e.what()), param);
  }
}

// An assistant turn's tool_calls as templates expect them (vLLM's _postprocess_messages): each
// function's arguments a mapping, parsed from the JSON string OpenAI clients send ("" or absent:
// {}). Qwen3.6's template iterates them with |items and fails on a string.
Json normalize_tool_calls(const Json& calls, size_t i) {
  if (!calls.is_array()) throw bad_request(fmt::format("messages[{}].tool_calls must be an array", i), "messages");
  Json out = Json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    Json call = calls[k];
    const std::string where = fmt::format("messages[{}].tool_calls[{}]", i, k);
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
      throw bad_request(where + " must be {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", "messages");
    Json& args = call["function"]["arguments"];
    if (args.is_null() || (args.is_string() && args.get<std::string>().empty())) args = Json::object();
    else if (args.is_string()) args = parse_bounded(args.get<std::string>(), where + ".function.arguments", "messages");
    out.push_back(std::move(call));
  }
  return out;
}

// Message content: a string, or an array of {"type": "text", "text": ...} parts (joined).
Json normalize_content(const Json& content, size_t i) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) throw bad_request(fmt::format("messages[{}].content must be a string or an array of parts", i), "messages");
  std::string text;
  for (const Json& part : content) {
    if (!has_type(part, "text") || !part.contains("text") || !part["text"].is_string())
      throw bad_request(fmt::format("messages[{}].content: only {{\"type\": \"text\", \"text\": ...}} parts are supported", i), "messages");
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

Json parse_body(const std::string& body) {
  Json j = parse_bounded(body, "the request body", "");
  if (!j.is_object()) throw bad_request("the request body must be a JSON object");
  return j;
}

int resolve_max_tokens(int64_t prompt_len, std::optional<int> max_tokens, int64_t max_model_len,
                       int64_t default_cap, const char* prompt_param) {
  if (prompt_len >= max_model_len)
    throw bad_request(fmt::format("This model's maximum context length is {} tokens. However, your prompt has {} tokens "
                                  "(no room left for the completion). Please reduce the length of the prompt.",
                                  max_model_len, prompt_len), prompt_param);
  const int64_t left = max_model_len - prompt_len;
  if (!max_tokens) return int(std::min(left, default_cap));
  if (prompt_len + *max_tokens > max_model_len)
    throw bad_request(fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens "
                                  "({} in the prompt, {} for the completion). Please reduce the prompt or max_tokens.",
                                  max_model_len, prompt_len + *max_tokens, prompt_len, *max_tokens), "max_tokens");
  return *max_tokens;
}

CompletionRequest parse_completion_request(const Json& body, int32_t vocab_size) {
  CompletionRequest r;
  parse_common(body, vocab_size, r);
  const Json* p = field(body, "prompt");
  if (!p) throw bad_request("'prompt' is required", "prompt");
  if (p->is_string()) {
    r.prompts.push_back({true, p->get<std::string>(), {}});
  } else if (p->is_array()) {
    if (p->empty()) throw bad_request("'prompt' must not be empty", "prompt");
    if ((*p)[0].is_number()) {
      r.prompts.push_back({false, {}, parse_id_list(*p, vocab_size)});
    } else {
      for (const Json& e : *p) {
        if (e.is_string()) r.prompts.push_back({true, e.get<std::string>(), {}});
        else if (e.is_array()) r.prompts.push_back({false, {}, parse_id_list(e, vocab_size)});
        else throw bad_request("'prompt' must be a string, an array of strings, token ids, or arrays of token ids", "prompt");
      }
    }
  } else {
    throw bad_request("'prompt' must be a string, an array of strings, token ids, or arrays of token ids", "prompt");
  }
  for (const PromptInput& in : r.prompts)
    if (in.is_text && in.text.empty()) throw bad_request("'prompt' must not be empty", "prompt");
  if (r.prompts.size() * size_t(r.sampling.n) > 1024) throw bad_request("too many prompts x n (limit 1024)", "prompt");
  r.echo = get_bool(body, "echo", false);
  if (auto lp = get_int(body, "logprobs")) {
    if (*lp < 0 || *lp > 20) throw bad_request(fmt::format("'logprobs' must be in [0, 20], got {}", *lp), "logprobs");
    r.sampling.logprobs = int(*lp);
    if (r.echo) throw bad_request("'echo' together with 'logprobs' (prompt logprobs) is not supported", "echo");
  }
  if (auto s = get_string(body, "suffix"); s && !s->empty()) throw bad_request("'suffix' is not supported", "suffix");
  return r;
}

ChatRequest parse_chat_request(const Json& body, int32_t vocab_size) {
  ChatRequest r;
  parse_common(body, vocab_size, r);
  const Json* m = field(body, "messages");
  if (!m) throw bad_request("'messages' is required", "messages");
  if (!m->is_array()) throw bad_request("'messages' must be an array", "messages");
  if (m->empty()) throw bad_request("'messages' must not be empty", "messages");
  r.messages = Json::array();
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& msg = (*m)[i];
    if (!msg.is_object()) throw bad_request(fmt::format("messages[{}] must be an object", i), "messages");
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string())
      throw bad_request(fmt::format("messages[{}].role must be a string", i), "messages");
    const std::string rs = role->get<std::string>();
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "tool" && rs != "developer")
      throw bad_request(fmt::format("messages[{}].role '{}' is not one of system, developer, user, assistant, tool", i, rs), "messages");
    Json out = msg;
    Json content = msg.contains("content") ? normalize_content(msg["content"], i) : Json(nullptr);
    if (content.is_null() && !(rs == "assistant" && msg.contains("tool_calls")))
      throw bad_request(fmt::format("messages[{}].content is required", i), "messages");
    // An assistant turn that only calls tools has content null; templates concatenate it as a
    // string (Qwen3's does), so it renders as "" as in vLLM, which joins the absent parts.
    out["content"] = content.is_null() ? Json("") : content;
    if (rs == "assistant" && msg.contains("tool_calls") && !msg["tool_calls"].is_null()) {
      out["tool_calls"] = normalize_tool_calls(msg["tool_calls"], i);
      if (out["tool_calls"].empty()) out.erase("tool_calls");  // as vLLM: the plain assistant path
    }
    r.messages.push_back(std::move(out));
  }
  if (const Json* tools = field(body, "tools")) {
    if (!tools->is_array()) throw bad_request("'tools' must be an array", "tools");
    for (const Json& t : *tools) {
      if (!has_type(t, "function") || !t.contains("function") || !t["function"].is_object() ||
          !t["function"].contains("name") || !t["function"]["name"].is_string() || t["function"]["name"].get<std::string>().empty())
        throw bad_request("'tools' entries must be {\"type\": \"function\", \"function\": {\"name\": ...}}", "tools");
      if (t["function"].contains("parameters") && !t["function"]["parameters"].is_object() && !t["function"]["parameters"].is_null())
        throw bad_request("'tools[].function.parameters' must be an object", "tools");
    }
    if (!tools->empty()) r.tools = *tools;
  }
  if (const Json* tc = field(body, "tool_choice")) {
    if (tc->is_string()) {
      const std::string s = tc->get<std::string>();
      if (s == "none") r.tool_choice = ToolChoice::None;
      else if (s == "auto") r.tool_choice = ToolChoice::Auto;
      else if (s == "required") r.tool_choice = ToolChoice::Required;
      else throw bad_request("'tool_choice' must be none, auto, required or {\"type\": \"function\", ...}", "tool_choice");
    } else if (has_type(*tc, "function") && tc->contains("function") &&
               (*tc)["function"].is_object() && (*tc)["function"].contains("name") && (*tc)["function"]["name"].is_string()) {
      r.tool_choice = ToolChoice::Named;
      r.tool_choice_name = (*tc)["function"]["name"].get<std::string>();
    } else {
      throw bad_request("'tool_choice' must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}", "tool_choice");
    }
    if (r.tool_choice != ToolChoice::None && r.tools.is_null())
      throw bad_request("'tool_choice' needs 'tools'", "tool_choice");
    if (r.tool_choice == ToolChoice::Named) {
      bool found = false;
      for (const Json& t : r.tools) found |= t["function"]["name"] == r.tool_choice_name;
      if (!found) throw bad_request(fmt::format("'tool_choice' names '{}', which is not in 'tools'", r.tool_choice_name), "tool_choice");
    }
  }
  if (const Json* kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object()) throw bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    r.chat_template_kwargs = *kw;
  }
  r.add_generation_prompt = get_bool(body, "add_generation_prompt", true);
  r.logprobs = get_bool(body, "logprobs", false);
  if (auto k = get_int(body, "top_logprobs")) {
    if (*k < 0 || *k > 20) throw bad_request(fmt::format("'top_logprobs' must be in [0, 20], got {}", *k), "top_logprobs");
    if (!r.logprobs) throw bad_request("'top_logprobs' requires 'logprobs': true", "top_logprobs");
    r.sampling.logprobs = int(*k);
  } else if (r.logprobs) {
    r.sampling.logprobs = 0;
  }
  return r;
}

}  // namespace portllm::server
