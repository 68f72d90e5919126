// PCRE2 (UTF + UCP, JIT-compiled) wrapper for the tokenizer's split patterns. HF tokenizers uses
// Oniguruma; PCRE2 with Unicode properties accepts the same pattern dialect for every pattern
// real tokenizer.json files ship (\p{L}, \p{N}, (?i:...), look-ahead).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace portllm::tok {

class Regex {
 public:
  // `where` names the file/field for the error message when the pattern does not compile.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Calls on_match(start, end) for each non-empty, non-overlapping match, left to right.
  // `text` must be valid UTF-8 (it is not re-checked, for speed).
  template <class F>
  void for_each_match(std::string_view text, F&& on_match) const {
    size_t pos = 0;
    size_t start, end;
    while (pos <= text.size() && find(text, pos, start, end)) {
      if (end == start) {
        // Empty match: HF drops empty splits; step over one character and keep searching.
        if (start >= text.size()) break;
        pos = start + 1;
        while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
        continue;
      }
      on_match(start, end);
      pos = end;
    }
  }

  // Escapes `literal` so it matches itself (for Split/Replace with a "String" pattern).
  static std::string quote(std::string_view literal);

 private:
  bool find(std::string_view text, size_t from, size_t& start, size_t& end) const;

  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

}  // namespace portllm::tok
