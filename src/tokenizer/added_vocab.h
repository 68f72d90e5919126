// tokenizer.json "added_tokens": tokens matched verbatim in the input before normalization and
// pre-tokenization (leftmost, then longest match first), e.g. <|im_start|>.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/string_map.h"

namespace portllm::tok {

class Normalizer;

struct AddedToken {
  int32_t id;
  std::string content;
  bool special, lstrip, rstrip, normalized, single_word;
};

// One piece of input after added-token extraction: either plain text or a matched token.
struct Segment {
  std::string text;  // empty for matched tokens
  int32_t id;        // -1 for plain text
  bool at_start;     // begins at offset 0 of the input
};

class AddedVocab {
 public:
  AddedVocab(const nlohmann::json& added_tokens, const std::string& where);
  // Builds the matchers; `normalizer` (may be null) is applied to normalized tokens' content.
  void build(const Normalizer* normalizer);

  // Splits `text` around non-normalized added tokens (matched on the raw text).
  void split_raw(std::string_view text, bool at_start, std::vector<Segment>& out) const;
  // Splits already normalized `text` around normalized added tokens.
  void split_normalized(std::string_view text, bool at_start, std::vector<Segment>& out) const;

  bool has_raw() const { return !raw_.empty(); }
  bool has_normalized() const { return !normalized_.empty(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find_id(int32_t id) const;
  const AddedToken* find_content(std::string_view content) const;

 private:
  // Byte trie for leftmost-longest matching; children are kept sorted for small nodes.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> next;
      int32_t token = -1;  // index into tokens_ when a token ends here
    };
    std::vector<Node> nodes{Node{}};
    bool first_byte[256] = {};
    void insert(std::string_view s, int32_t token);
    // Longest token starting at text[pos]: returns its index and sets `len`, or -1.
    int32_t longest(std::string_view text, size_t pos, size_t& len) const;
    bool empty() const { return nodes.size() == 1; }
  };
  void split(const Trie& trie, std::string_view text, bool at_start,
             std::vector<Segment>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  StringMap<size_t> by_content_;
  Trie raw_, normalized_;
};

}  // namespace portllm::tok
