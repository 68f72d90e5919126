#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace portllm::tok {

namespace {

struct ByteTables {
  std::array<std::string, 256> byte_to_char;  // UTF-8 of the character for each byte
  std::array<int16_t, 324> char_to_byte;      // code point (< 324) -> byte, -1 when unmapped

  ByteTables() {
    char_to_byte.fill(-1);
    std::array<int, 256> cp{};
    std::array<bool, 256> printable{};
    for (int b = '!'; b <= '~'; ++b) printable[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
    int n = 0;
    for (int b = 0; b < 256; ++b) cp[b] = printable[b] ? b : 256 + n++;
    for (int b = 0; b < 256; ++b) {
      append_utf8(byte_to_char[b], static_cast<char32_t>(cp[b]));
      char_to_byte[cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

void byte_level_encode(std::string_view bytes, std::string& out) {
  const auto& t = tables();
  for (unsigned char c : bytes) out.append(t.byte_to_char[c]);
}

bool byte_level_decode(std::string_view token, std::string& out) {
  const auto& t = tables();
  const size_t start = out.size();
  size_t i = 0;
  while (i < token.size()) {
    const char32_t cp = next_codepoint(token, i);
    if (cp >= t.char_to_byte.size() || t.char_to_byte[cp] < 0) {
      out.resize(start);
      return false;
    }
    out.push_back(static_cast<char>(t.char_to_byte[cp]));
  }
  return true;
}

}  // namespace portllm::tok
