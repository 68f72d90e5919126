#include "server/server_state.h"

#include "core/error.h"
#include "server/tool_parser.h"
#include "tokenizer/tokenizer.h"

namespace portllm::server {

namespace {
// tokenizer_config.json writes special tokens as a string or {"content": ...}.
std::string token_text(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return {};
}
}  // namespace

void ServerState::set_engine(std::shared_ptr<Engine> e) {
  std::shared_ptr<const tok::ChatTemplate> tmpl;
  std::string err;
  try {
    if (!cfg.chat_template.empty()) {
      const auto& tc = e->tokenizer().config();
      tmpl = std::make_shared<const tok::ChatTemplate>(tok::ChatTemplate::from_string(
          cfg.chat_template, token_text(tc, "bos_token"), token_text(tc, "eos_token"), "--chat-template"));
    } else {
      tmpl = std::make_shared<const tok::ChatTemplate>(tok::ChatTemplate::from_tokenizer_dir(cfg.model_path));
    }
  } catch (const std::exception& ex) {
    err = std::string("this model has no usable chat template (pass --chat-template): ") + ex.what();
  }
  const std::string src = tmpl ? tmpl->source() : std::string();
  if (cfg.tool_call_parser == "auto") tool_parser = tmpl ? detect_tool_parser(src) : "";
  else if (cfg.tool_call_parser != "none") tool_parser = cfg.tool_call_parser;
  if (cfg.reasoning_parser == "auto") reasoning = src.find("<think>") != std::string::npos;
  else reasoning = cfg.reasoning_parser != "none";
  std::lock_guard<std::mutex> lock(mu);
  engine_ = std::move(e);
  template_ = std::move(tmpl);
  template_error_ = std::move(err);
}

}  // namespace portllm::server
