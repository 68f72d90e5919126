#include "cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace portllm::cli {

ProgressBar::ProgressBar(int total, std::string label)
    : total_(total), label_(std::move(label)), enabled_(isatty(2) != 0),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

void ProgressBar::update(int done, int64_t output_tokens) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;  // redraw at most 10x/s
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  constexpr int kWidth = 30;
  const int fill = total_ > 0 ? int(int64_t(kWidth) * done / total_) : kWidth;
  std::string bar(size_t(fill), '=');
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r%s [%s] %d/%d  %.1fs  %.1f tok/s", label_.c_str(), bar.c_str(), done, total_,
               secs, secs > 0 ? double(output_tokens) / secs : 0.0);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fputc('\n', stderr);
}

}  // namespace portllm::cli
