#include "server/connection_threads.h"

#include <algorithm>
#include <system_error>

namespace portllm::server {

ConnectionThreads::ConnectionThreads(size_t max_threads, size_t keep, std::chrono::milliseconds idle_exit)
    : max_(std::max<size_t>(1, max_threads)), keep_(std::min(keep, max_)), idle_exit_(idle_exit) {}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

std::vector<std::thread> ConnectionThreads::take_ended() {
  std::vector<std::thread> out;
  for (std::thread::id id : ended_) {
    auto it = std::find_if(threads_.begin(), threads_.end(), [&](const std::thread& t) { return t.get_id() == id; });
    if (it == threads_.end()) continue;
    out.push_back(std::move(*it));
    threads_.erase(it);
  }
  ended_.clear();
  return out;
}

void ConnectionThreads::enqueue(std::function<void()> fn) {
  std::vector<std::thread> ended;
  {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_.push_back(std::move(fn));
    ended = take_ended();
    // A waiting thread takes the job; without one, a new thread does (a thread notified but not
    // yet awake still counts as waiting, and it takes one of the jobs).
    if (idle_ < jobs_.size() && threads_.size() < max_) {
      try {
        threads_.emplace_back([this] { work(); });
      } catch (const std::system_error&) {
        // Out of threads for now: the job waits for one of those running.
      }
    }
  }
  cv_.notify_one();
  for (std::thread& t : ended) t.join();
}

void ConnectionThreads::work() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    ++idle_;
    const bool woken = cv_.wait_for(lk, idle_exit_, [&] { return stop_ || !jobs_.empty(); });
    --idle_;
    if (!jobs_.empty()) {
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lk.unlock();
      fn();
      lk.lock();
      continue;
    }
    if (stop_) return;
    if (!woken && threads_.size() - ended_.size() > keep_) {  // idle for idle_exit, and not one of the kept
      ended_.push_back(std::this_thread::get_id());
      return;
    }
  }
}

void ConnectionThreads::shutdown() {
  std::vector<std::thread> all;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    all.swap(threads_);
    ended_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : all)
    if (t.joinable()) t.join();
}

size_t ConnectionThreads::num_threads() {
  std::lock_guard<std::mutex> lk(mu_);
  return threads_.size() - ended_.size();
}

}  // namespace portllm::server
