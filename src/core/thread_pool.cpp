#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>

namespace portllm {

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < std::max(1, num_threads); ++i)
    workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t, int)>* job;
    int64_t n, chunk;
    int parts;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunk = job_chunk_;
      parts = job_parts_;
    }
    if (index < parts) {
      int64_t b = int64_t(index) * chunk, e = std::min(n, b + chunk);
      if (b < e) (*job)(b, e, index);
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                              int64_t grain) {
  if (n <= 0) return;
  const int64_t max_parts = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  const int parts = int(std::min<int64_t>(num_threads(), max_parts));
  if (parts == 1 || workers_.empty()) {
    fn(0, n, 0);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  const int64_t chunk = (n + parts - 1) / parts;
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    job_parts_ = parts;
    pending_ = int(workers_.size());
    ++generation_;
  }
  cv_start_.notify_all();
  fn(0, std::min(n, chunk), 0);
  std::unique_lock<std::mutex> lk(mu_);
  cv_done_.wait(lk, [&] { return pending_ == 0; });
  job_ = nullptr;
}

namespace {
std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
std::mutex g_global_mu;
}  // namespace

ThreadPool& ThreadPool::global() {
  std::lock_guard<std::mutex> lk(g_global_mu);
  auto& p = global_slot();
  if (!p) {
    int n = int(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("PORTLLM_NUM_THREADS")) n = std::atoi(env);
    p = std::make_unique<ThreadPool>(std::max(1, n));
  }
  return *p;
}

void ThreadPool::set_global_threads(int n) {
  std::lock_guard<std::mutex> lk(g_global_mu);
  global_slot() = std::make_unique<ThreadPool>(std::max(1, n));
}

}  // namespace portllm
