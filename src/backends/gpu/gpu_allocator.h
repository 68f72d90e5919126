// A caching device allocator. Freed blocks go to free lists keyed by size class instead of back
// to the driver, because gpuMalloc/gpuFree synchronize the device and cost tens of microseconds:
// a decode step allocates and frees the same activation sizes every layer. Blocks are reused in
// stream order (one main stream), the same contract PyTorch's caching allocator keeps.
// Size classes: requests up to 1 MiB round up to a power of two (>= 512 B); larger ones round up
// to a multiple of 2 MiB and may reuse a cached block up to 1.25x their size (a knob, for
// measuring: gpu_allocator.cpp).
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "backend/device_caps.h"

namespace portllm::gpu {

class CachingAllocator : public std::enable_shared_from_this<CachingAllocator> {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  ~CachingAllocator();
  // The returned owner gives the block back to this allocator's cache when released.
  std::shared_ptr<void> allocate(size_t bytes);
  void empty_cache();  // returns every cached (unused) block to the driver
  MemoryStats stats() const;
  void reset_peak();
  static size_t size_class(size_t bytes);
  // While a graph is being captured, blocks come from and return to a separate graph pool: the
  // addresses baked into graphs are never handed to tensors that live across a replay. Graphs
  // replay one at a time on one stream, so they may share the pool.
  void set_graph_capture(bool on);

 private:
  void release(void* p, size_t cls, bool graph_pool);
  void* malloc_or_flush(size_t cls);
  int device_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;        // size class -> cached blocks
  std::multimap<size_t, void*> graph_free_;  // the graph pool's cached blocks
  bool capturing_ = false;
  size_t allocated_ = 0, peak_ = 0, reserved_ = 0;
  int64_t driver_allocations_ = 0;
};

}  // namespace portllm::gpu
