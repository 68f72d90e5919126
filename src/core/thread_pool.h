// A fixed pool of worker threads for data-parallel CPU kernels. parallel_for splits [0, n) into
// contiguous chunks, one per thread, and blocks until all are done; the calling thread works too.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace portllm {

// The least work (about one multiply-add per unit) worth a chunk of its own: handing a chunk to
// another thread costs a condition-variable wake and a wait, ~10 us on a busy 2-core machine,
// so smaller jobs run on the calling thread alone. stories260K (64-wide rows) decoded at 0.66 ms
// per token on 2 threads against 0.08 ms on 1 while its GEMVs were split by column count alone.
inline constexpr int64_t kMinChunkWork = int64_t(1) << 18;
// parallel_for's grain for items of `work_per_item` units each.
inline int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kMinChunkWork / std::max<int64_t>(1, work_per_item));
}

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return int(workers_.size()) + 1; }
  // fn(begin, end, thread_index) over chunks of [0, n); chunks are at least `grain` long.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn,
                    int64_t grain = 1);

  // The process-wide pool used by CPU kernels (size set once by set_global_threads or
  // PORTLLM_NUM_THREADS, default: hardware concurrency).
  static ThreadPool& global();
  static void set_global_threads(int n);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0, job_chunk_ = 0;
  int job_parts_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::mutex call_mu_;  // one parallel_for at a time (kernels are called from one thread)
};

}  // namespace portllm
