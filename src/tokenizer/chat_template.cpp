#include "tokenizer/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "tokenizer/jinja/interpreter.h"

namespace portllm::tok {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) PL_THROW("{}: cannot open", p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::ordered_json read_json(const fs::path& p) {
  try {
    return nlohmann::ordered_json::parse(read_file(p));
  } catch (const nlohmann::json::exception& e) {
    PL_THROW("{}: invalid JSON: {}", p.string(), e.what());
  }
}

// A special token is a string or an AddedToken object {"content": ...}; null means unset.
std::string token_field(const nlohmann::ordered_json& cfg, const char* key, const fs::path& path) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  PL_THROW("{}: field '{}' must be a string or an object with 'content'", path.string(), key);
}

// "chat_template": a string, or a list of {name, template} (the "default" one is used).
std::string template_field(const nlohmann::ordered_json& v, const fs::path& path) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string names;
    for (auto& e : v) {
      if (!e.is_object() || !e.contains("name") || !e.contains("template"))
        PL_THROW("{}: 'chat_template' list entries need 'name' and 'template'", path.string());
      if (e["name"] == "default") return e["template"].get<std::string>();
      names += (names.empty() ? "" : ", ") + e["name"].get<std::string>();
    }
    PL_THROW("{}: 'chat_template' has no template named 'default' (has: {})", path.string(), names);
  }
  PL_THROW("{}: 'chat_template' must be a string or a list of {{name, template}}", path.string());
}

}  // namespace

ChatTemplate ChatTemplate::from_tokenizer_dir(const std::string& dir) {
  fs::path d(dir);
  fs::path cfg_path = d / "tokenizer_config.json";
  nlohmann::ordered_json cfg = nlohmann::ordered_json::object();
  if (fs::exists(cfg_path)) cfg = read_json(cfg_path);

  std::string source, source_name;
  if (fs::exists(d / "chat_template.jinja")) {
    source_name = (d / "chat_template.jinja").string();
    source = read_file(d / "chat_template.jinja");
  } else if (fs::exists(d / "chat_template.json")) {
    fs::path p = d / "chat_template.json";
    auto j = read_json(p);
    if (!j.contains("chat_template")) PL_THROW("{}: missing field 'chat_template'", p.string());
    source_name = p.string() + " (chat_template)";
    source = template_field(j["chat_template"], p);
  } else if (cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
    source_name = cfg_path.string() + " (chat_template)";
    source = template_field(cfg["chat_template"], cfg_path);
  } else {
    PL_THROW("{}: no chat template: tokenizer_config.json has no 'chat_template' and there is no "
             "chat_template.jinja or chat_template.json", dir);
  }

  ChatTemplate t = from_string(std::move(source), token_field(cfg, "bos_token", cfg_path),
                               token_field(cfg, "eos_token", cfg_path), std::move(source_name));
  for (const char* k : {"unk_token", "pad_token"}) {
    std::string v = token_field(cfg, k, cfg_path);
    if (!v.empty()) t.extra_tokens_.emplace_back(k, std::move(v));
  }
  return t;
}

ChatTemplate ChatTemplate::from_string(std::string source, std::string bos_token, std::string eos_token,
                                       std::string source_name) {
  ChatTemplate t;
  t.tmpl_ = std::make_shared<const jinja::Template>(source, std::move(source_name));
  t.source_ = std::move(source);
  t.bos_token_ = std::move(bos_token);
  t.eos_token_ = std::move(eos_token);
  return t;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& kwargs) const {
  using jinja::Value;
  if (!messages.is_array()) PL_THROW("chat template: 'messages' must be an array");
  if (!kwargs.is_null() && !kwargs.is_object()) PL_THROW("chat template: kwargs must be an object");
  // The variables transformers' apply_chat_template passes: messages, tools, documents,
  // add_generation_prompt, the special tokens that are set, then the caller's extra kwargs.
  std::vector<std::pair<std::string, Value>> vars;
  auto set = [&](const std::string& k, Value v) {
    for (auto& kv : vars)
      if (kv.first == k) {
        kv.second = std::move(v);
        return;
      }
    vars.emplace_back(k, std::move(v));
  };
  set("messages", jinja::from_json(messages));
  set("tools", Value::none());
  set("documents", Value::none());
  set("add_generation_prompt", Value(false));
  if (!bos_token_.empty()) set("bos_token", Value(bos_token_));
  if (!eos_token_.empty()) set("eos_token", Value(eos_token_));
  for (auto& [k, v] : extra_tokens_) set(k, Value(v));
  if (kwargs.is_object())
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) set(it.key(), jinja::from_json(it.value()));
  return tmpl_->render(vars);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const nlohmann::json& kwargs) const {
  return render(nlohmann::ordered_json::parse(messages.dump()), nlohmann::ordered_json::parse(kwargs.dump()));
}

}  // namespace portllm::tok
