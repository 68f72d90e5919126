// Stop strings over streamed text. Text arrives in pieces (one token's worth at a time); a stop
// string may straddle pieces, and neither the stop string nor anything after it is emitted.
// To get that without rescanning the whole output, text that could still become the start of a
// stop string is held back: only the held tail plus the new piece is searched each time (an
// occurrence cannot start in text already emitted, because such text was never a prefix).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace portllm {

class StopChecker {
 public:
  explicit StopChecker(std::vector<std::string> stops = {});
  bool active() const { return !stops_.empty(); }
  // Adds a piece of text; returns the part that is safe to emit now. After a match it returns
  // the text before the stop string and matched() becomes true; later pieces are ignored.
  std::string push(std::string_view piece);
  // The held-back tail, for when generation ends without a match.
  std::string flush();
  bool matched() const { return matched_ >= 0; }
  const std::string& matched_stop() const { return stops_[size_t(matched_)]; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  int matched_ = -1;
};

}  // namespace portllm
