#include "engine/stop_checker.h"

#include <algorithm>

namespace portllm {

StopChecker::StopChecker(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopChecker::push(std::string_view piece) {
  if (matched()) return {};
  if (stops_.empty()) return std::string(piece);
  std::string buf = std::move(held_);
  held_.clear();
  buf.append(piece);
  // Earliest occurrence of any stop string wins (ties: the first listed).
  size_t best = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t p = buf.find(stops_[i]);
    if (p != std::string::npos && (best == std::string::npos || p < best)) {
      best = p;
      matched_ = int(i);
    }
  }
  if (best != std::string::npos) return buf.substr(0, best);
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t k = std::min(s.size() - 1, buf.size()); k > hold; --k)
      if (buf.compare(buf.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  }
  held_ = buf.substr(buf.size() - hold);
  buf.resize(buf.size() - hold);
  return buf;
}

std::string StopChecker::flush() {
  if (matched()) return {};
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace portllm
