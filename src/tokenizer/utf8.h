// UTF-8 helpers shared by the tokenizer stages. Input text from users may be invalid UTF-8;
// everything downstream (PCRE2 in no-check mode, utf8proc) relies on text being valid, so it
// is repaired once at the entry point.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace portllm::tok {

// Copies `in`, replacing each maximal invalid subsequence by U+FFFD (the same policy as Rust's
// String::from_utf8_lossy and Python's errors="replace", so decode() output matches HF).
std::string to_valid_utf8(std::string_view in);

// True when `in` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view in);

// Length of the sequence starting with lead byte `c` (1 for invalid leads, so loops advance).
inline size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  if ((c & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at s[i] (s must be valid) and advances i past it.
char32_t next_codepoint(std::string_view s, size_t& i);

void append_utf8(std::string& out, char32_t cp);

// The U+FFFD replacement character, as UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Whether `s` ends in the middle of a multi-byte sequence (an incomplete character).
bool ends_with_incomplete_utf8(std::string_view s);

}  // namespace portllm::tok
