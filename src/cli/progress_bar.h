// A one-line progress bar on stderr, drawn only when stderr is a terminal (so logs and CI output
// stay clean). Thread-safe: update() may be called from the engine's callback thread.
#pragma once
#include <chrono>
#include <mutex>
#include <string>

namespace portllm::cli {

class ProgressBar {
 public:
  ProgressBar(int total, std::string label);
  ~ProgressBar() { finish(); }
  // done requests of total, and output tokens so far (for the rate).
  void update(int done, int64_t output_tokens);
  void finish();

 private:
  int total_;
  std::string label_;
  bool enabled_, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_;
  std::mutex mu_;
};

}  // namespace portllm::cli
