#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace portllm::tok {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tok_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  const std::span<const int32_t> window(ids_.data() + prefix_offset_, ids_.size() - prefix_offset_);
  std::string text = tok_.decode(window, skip_special_);
  // Hold back while the text ends in a replacement character: the next token may complete it.
  const bool incomplete = text.size() >= kReplacementChar.size() &&
                          text.compare(text.size() - kReplacementChar.size(),
                                       kReplacementChar.size(), kReplacementChar) == 0;
  if (incomplete || text.size() <= prefix_text_.size() ||
      text.compare(0, prefix_text_.size(), prefix_text_) != 0)
    return {};
  std::string out = text.substr(prefix_text_.size());
  // Slide the window: the tokens just emitted become the context of the next push.
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  const std::span<const int32_t> ctx(ids_.data() + prefix_offset_, read_offset_ - prefix_offset_);
  prefix_text_ = tok_.decode(ctx, skip_special_);
  // Drop ids that can no longer be part of a window.
  if (prefix_offset_ > 64) {
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_offset_));
    read_offset_ -= prefix_offset_;
    prefix_offset_ = 0;
  }
  return out;
}

std::string StreamDecoder::finish() {
  const std::span<const int32_t> window(ids_.data() + prefix_offset_, ids_.size() - prefix_offset_);
  std::string text = tok_.decode(window, skip_special_);
  std::string out;
  if (text.size() > prefix_text_.size() && text.compare(0, prefix_text_.size(), prefix_text_) == 0)
    out = text.substr(prefix_text_.size());
  ids_.clear();
  prefix_offset_ = read_offset_ = 0;
  prefix_text_.clear();
  return out;
}

}  // namespace portllm::tok
