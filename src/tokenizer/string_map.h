// std::unordered_map keyed by std::string that can be searched with a std::string_view
// (C++20 heterogeneous lookup), so hot paths look words up without allocating.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace portllm::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace portllm::tok
