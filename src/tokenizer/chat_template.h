// A model's chat template (Hugging Face `chat_template`, a Jinja2 program) and its rendering,
// byte-exact with transformers' apply_chat_template for the templates real models ship.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::tok {

namespace jinja {
class Template;
}

class ChatTemplate {
 public:
  // Reads DIR/tokenizer_config.json: "chat_template" (a string, or a list of {name, template}
  // from which "default" is taken) and bos_token/eos_token (a string or {"content": ...}).
  // DIR/chat_template.jinja, else DIR/chat_template.json ({"chat_template": ...}), takes
  // precedence over the config's template. Throws portllm::Error when there is no template or it
  // uses a construct the interpreter does not support (the message names construct and line).
  static ChatTemplate from_tokenizer_dir(const std::string& dir);

  // Empty bos/eos: the variable is left undefined (as HF does for an unset special token).
  static ChatTemplate from_string(std::string source, std::string bos_token, std::string eos_token,
                                  std::string source_name = "chat_template");

  // messages: array of {role, content, ...}. kwargs: add_generation_prompt, tools,
  // enable_thinking and any other keys, which become template variables. Use ordered_json so
  // `tojson` output keeps the caller's key order (HF's json.dumps keeps insertion order).
  // raise_exception(msg) in the template throws portllm::Error(msg).
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& kwargs) const;
  // Convenience for nlohmann::json callers: keys arrive (and tojson prints them) sorted.
  std::string render(const nlohmann::json& messages, const nlohmann::json& kwargs) const;

  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  ChatTemplate() = default;

  std::string source_;
  std::string bos_token_, eos_token_;
  std::vector<std::pair<std::string, std::string>> extra_tokens_;  // unk_token, pad_token
  std::shared_ptr<const jinja::Template> tmpl_;
};

}  // namespace portllm::tok
