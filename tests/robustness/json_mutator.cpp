#include "json_mutator.h"

#include <array>

namespace portllm::robustness {

std::string mutate_text(const std::string& text, std::mt19937_64& rng, int count) {
  static const std::array<const char*, 14> tokens = {"{%", "%}", "{{", "}}", "{#", "#}", "(", ")", "[", "]",
                                                      "'", "\"", "|", "endfor"};
  std::string s = text;
  auto upto = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n)(rng); };  // 0..n
  for (int i = 0; i < count; ++i) {
    const size_t a = upto(s.size()), len = std::min(upto(40), s.size() - a), op = upto(3);
    if (op == 0) {
      s.erase(a, len);
    } else if (op == 1) {
      s.insert(a, s.substr(a, len));
    } else if (op == 2) {
      const std::string cut = s.substr(a, len);
      s.erase(a, len);
      s.insert(upto(s.size()), cut);
    } else {
      s.insert(a, tokens[upto(tokens.size() - 1)]);
    }
  }
  return s;
}

}  // namespace portllm::robustness
