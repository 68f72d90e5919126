// Splits model output into reasoning and answer for Qwen3 / DeepSeek-R1 style models, which
// write their reasoning between <think> and </think>. Works incrementally (streaming): text that
// might be the start of a tag is held back until the next push() or finish() decides it.
//
// Two cases occur in practice: the model itself writes "<think>" (Qwen3 with enable_thinking), or
// the chat template already ended the prompt inside "<think>\n" (Qwen3-2507 thinking models,
// DeepSeek-R1): then the parser starts in reasoning (`starts_in_reasoning`, see
// prompt_ends_in_reasoning()). Without any tag the whole output is content.
#pragma once
#include <string>
#include <string_view>

namespace portllm::server {

class ReasoningParser {
 public:
  struct Delta {
    std::string reasoning, content;
  };

  explicit ReasoningParser(bool starts_in_reasoning = false, std::string start_tag = "<think>",
                           std::string end_tag = "</think>");
  Delta push(std::string_view text);
  Delta finish();
  // Whole-text convenience: push(text) + finish().
  Delta parse(std::string_view text);

  // True when the rendered prompt leaves the model inside a reasoning block (its last <think> is
  // not closed).
  static bool prompt_ends_in_reasoning(std::string_view prompt, std::string_view start_tag = "<think>",
                                       std::string_view end_tag = "</think>");

 private:
  enum class State { Before, Reasoning, Content };
  State state_;
  std::string start_, end_, buf_;
  bool strip_newlines_ = false;  // drop the "\n\n" that follows </think>
};

// Length of the longest suffix of `text` that is a proper prefix of `tag` (text to hold back).
size_t partial_tag_suffix(std::string_view text, std::string_view tag);

}  // namespace portllm::server
