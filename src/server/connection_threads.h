// The HTTP server's task queue: a thread per connection being served, made on demand.
//
// httplib serves a connection on one thread of its task queue for as long as the connection
// lives: a keep-alive connection between requests, a stream, or a client that sends its request
// slowly. With a fixed pool of N threads, N idle or slow connections stall every other request
// (even /health) until their read timeouts: 300 half-sent requests kept a 256-thread server from
// answering /health for the whole 60 s read timeout. Here a connection gets a thread whenever no
// idle one is waiting, up to `max_threads`; threads beyond `keep` end after `idle_exit` without
// work, so a quiet server holds few threads and a busy one is bounded by max_threads (and by
// the process's file-descriptor limit), not by a pool sized at start.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace portllm::server {

class ConnectionThreads final : public httplib::TaskQueue {
 public:
  ConnectionThreads(size_t max_threads, size_t keep, std::chrono::milliseconds idle_exit);
  ~ConnectionThreads() override;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread; enqueue() must not be called after.
  void shutdown() override;

  size_t num_threads();  // live threads (tests)

 private:
  void work();
  // Moves the threads that have ended out of threads_ (the caller joins them, unlocked).
  std::vector<std::thread> take_ended();

  const size_t max_, keep_;
  const std::chrono::milliseconds idle_exit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::vector<std::thread::id> ended_;
  size_t idle_ = 0;
  bool stop_ = false;
};

}  // namespace portllm::server
