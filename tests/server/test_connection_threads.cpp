// ConnectionThreads (server/connection_threads.h): a thread per job up to the cap, made on
// demand; the extra threads end when idle; shutdown runs what is queued.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "server/connection_threads.h"

using namespace portllm::server;
using namespace std::chrono_literals;

namespace {

// Jobs that each wait until `n` of them have started (or `limit` passes): they all finish in
// time only if n threads run them at once, as n connections that hold their threads do.
struct Rendezvous {
  explicit Rendezvous(int n) : n(n) {}
  void arrive_and_wait(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lk(mu);
    ++arrived;
    cv.notify_all();
    if (cv.wait_for(lk, limit, [&] { return arrived >= n; })) ++met;
  }
  int n, arrived = 0, met = 0;
  std::mutex mu;
  std::condition_variable cv;
};

}  // namespace

TEST(ConnectionThreads, RunsAsManyJobsAtOnceAsAreWaiting) {
  ConnectionThreads q(64, 2, 50ms);
  Rendezvous r(40);
  for (int i = 0; i < 40; ++i) q.enqueue([&] { r.arrive_and_wait(10s); });
  q.shutdown();
  EXPECT_EQ(r.arrived, 40);
  EXPECT_EQ(r.met, 40);  // a fixed pool of fewer threads leaves the rest waiting: they time out
}

TEST(ConnectionThreads, NeverMoreThreadsThanTheCap) {
  ConnectionThreads q(4, 1, 50ms);
  std::atomic<int> running{0}, most{0}, done{0};
  for (int i = 0; i < 12; ++i)
    q.enqueue([&] {
      const int now = ++running;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      std::this_thread::sleep_for(20ms);
      --running;
      ++done;
    });
  EXPECT_LE(q.num_threads(), 4u);
  q.shutdown();
  EXPECT_EQ(done.load(), 12);
  EXPECT_EQ(most.load(), 4);
}

TEST(ConnectionThreads, IdleThreadsEndDownToTheKeptOnes) {
  ConnectionThreads q(64, 2, 30ms);
  Rendezvous r(20);
  for (int i = 0; i < 20; ++i) q.enqueue([&] { r.arrive_and_wait(10s); });
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (r.met < 20 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(r.met, 20);
  EXPECT_GE(q.num_threads(), 20u);
  while (q.num_threads() > 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(q.num_threads(), 2u);
  // Ended threads are joined on the next enqueue; the queue still serves.
  std::atomic<bool> ran{false};
  q.enqueue([&] { ran = true; });
  q.shutdown();
  EXPECT_TRUE(ran.load());
}

TEST(ConnectionThreads, ShutdownRunsWhatIsQueued) {
  ConnectionThreads q(1, 1, 1s);
  std::atomic<int> done{0};
  q.enqueue([&] {
    std::this_thread::sleep_for(30ms);
    ++done;
  });
  for (int i = 0; i < 5; ++i) q.enqueue([&] { ++done; });
  q.shutdown();
  EXPECT_EQ(done.load(), 6);
}
