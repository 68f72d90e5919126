#include "server/reasoning_parser.h"

namespace portllm::server {

size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  size_t max = std::min(text.size(), tag.size() - 1);
  for (size_t n = max; n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

ReasoningParser::ReasoningParser(bool starts_in_reasoning, std::string start_tag, std::string end_tag)
    : state_(starts_in_reasoning ? State::Reasoning : State::Before),
      start_(std::move(start_tag)),
      end_(std::move(end_tag)) {}

bool ReasoningParser::prompt_ends_in_reasoning(std::string_view prompt, std::string_view start_tag,
                                               std::string_view end_tag) {
  size_t s = prompt.rfind(start_tag);
  if (s == std::string_view::npos) return false;
  size_t e = prompt.rfind(end_tag);
  return e == std::string_view::npos || e < s;
}

ReasoningParser::Delta ReasoningParser::push(std::string_view text) {
  Delta d;
  buf_.append(text);
  for (;;) {
    if (state_ == State::Before) {
      // Leading whitespace before <think> is not content yet.
      size_t i = buf_.find_first_not_of(" \t\r\n");
      if (i == std::string::npos) return d;
      std::string_view rest = std::string_view(buf_).substr(i);
      if (rest.size() >= start_.size() && rest.substr(0, start_.size()) == start_) {
        buf_.erase(0, i + start_.size());
        state_ = State::Reasoning;
        continue;
      }
      if (start_.compare(0, rest.size(), rest) == 0) return d;  // maybe the start of <think>
      state_ = State::Content;
      continue;
    }
    if (state_ == State::Reasoning) {
      size_t e = buf_.find(end_);
      if (e != std::string::npos) {
        d.reasoning += buf_.substr(0, e);
        buf_.erase(0, e + end_.size());
        state_ = State::Content;
        strip_newlines_ = true;
        continue;
      }
      size_t hold = partial_tag_suffix(buf_, end_);
      d.reasoning += buf_.substr(0, buf_.size() - hold);
      buf_.erase(0, buf_.size() - hold);
      return d;
    }
    // Content
    if (strip_newlines_) {
      size_t i = buf_.find_first_not_of("\r\n");
      if (i == std::string::npos) {
        buf_.clear();
        return d;
      }
      buf_.erase(0, i);
      strip_newlines_ = false;
    }
    d.content += buf_;
    buf_.clear();
    return d;
  }
}

ReasoningParser::Delta ReasoningParser::finish() {
  Delta d;
  // Held text: a partial tag that never completed belongs to whatever block it was in.
  if (state_ == State::Reasoning) d.reasoning = std::move(buf_);
  else if (!strip_newlines_) d.content = std::move(buf_);
  buf_.clear();
  return d;
}

ReasoningParser::Delta ReasoningParser::parse(std::string_view text) {
  Delta a = push(text), b = finish();
  return {a.reasoning + b.reasoning, a.content + b.content};
}

}  // namespace portllm::server
