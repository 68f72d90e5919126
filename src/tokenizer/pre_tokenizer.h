// tokenizer.json "pre_tokenizer": splits normalized text into words that BPE encodes
// independently (and that the word cache is keyed by).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace portllm::tok {

struct Piece {
  std::string text;
  bool at_start;  // begins at offset 0 of the original input (Metaspace prepend_scheme "first")
};

// Receives one word (a view valid only during the call) and whether it starts the input.
using PieceFn = std::function<void(std::string_view, bool)>;

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their sub-pieces, in order. Empty pieces are dropped.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
  // Pure splitters (Split, Digits, Whitespace, ...) can also hand out their pieces as views
  // without building strings: the encode fast path.
  virtual bool can_stream() const { return false; }
  virtual void stream(std::string_view text, bool at_start, const PieceFn& fn) const {}
};

// GPT-2's word pattern (what ByteLevel with use_regex splits on).
extern const char* const kGpt2SplitPattern;

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& where);

}  // namespace portllm::tok
