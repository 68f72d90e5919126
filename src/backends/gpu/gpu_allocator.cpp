#include "backends/gpu/gpu_allocator.h"

#include <algorithm>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_check.h"

namespace portllm::gpu {

namespace {
// How much larger than a large request's class a cached block it reuses may be, in quarters: 5
// (1.25x) by default. A prefill step of a new token count otherwise takes new blocks from the
// driver (bench throughput counts them: `device allocs`); a higher bound lets it reuse the larger
// blocks of earlier, longer steps, at the price of holding them for smaller tensors.
// PORTLLM_ALLOC_REUSE_QUARTERS overrides it (read once), for measuring: not yet measured.
size_t reuse_quarters() {
  static const size_t v = size_t(std::max(4, env_int("PORTLLM_ALLOC_REUSE_QUARTERS", 5)));
  return v;
}
}  // namespace

size_t CachingAllocator::size_class(size_t bytes) {
  constexpr size_t kSmall = 1 << 20, kLargeStep = 2 << 20;
  if (bytes <= 512) return 512;
  if (bytes <= kSmall) {
    size_t c = 512;
    while (c < bytes) c <<= 1;
    return c;
  }
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

CachingAllocator::~CachingAllocator() {
  // At process exit the runtime may already be torn down: ignore errors here.
  for (auto& [cls, p] : free_) (void)gpuFree(p);
  for (auto& [cls, p] : graph_free_) (void)gpuFree(p);
}

void* CachingAllocator::malloc_or_flush(size_t cls) {
  gpuSetDevice(device_);
  void* p = nullptr;
  gpuError_t e = gpuMalloc(&p, cls);
  if (e == gpuErrorMemoryAllocation) {
    (void)gpuGetLastError();  // clear the sticky-free error state of this call
    // Out of memory: give the cached blocks back and try once more.
    for (auto& [c, q] : free_) {
      (void)gpuFree(q);
      reserved_ -= c;
    }
    free_.clear();
    e = gpuMalloc(&p, cls);
  }
  if (e != gpuSuccess) {
    size_t fr = 0, tot = 0;
    (void)gpuMemGetInfo(&fr, &tot);
    throw OutOfMemory(fmt::format("gpu:{}: out of memory allocating {} bytes ({} MiB allocated by portllm, {} MiB free of {} MiB): {}",
                                  device_, cls, allocated_ >> 20, fr >> 20, tot >> 20, gpuGetErrorString(e)));
  }
  reserved_ += cls;
  ++driver_allocations_;
  return p;
}

std::shared_ptr<void> CachingAllocator::allocate(size_t bytes) {
  const size_t want = size_class(bytes ? bytes : 1);
  void* p = nullptr;
  size_t cls = want;
  bool graph = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    graph = capturing_;
    auto& pool = graph ? graph_free_ : free_;
    auto it = pool.lower_bound(want);
    const size_t limit = want <= (1u << 20) ? want : want / 4 * reuse_quarters();
    if (it != pool.end() && it->first <= limit) {
      cls = it->first;
      p = it->second;
      pool.erase(it);
    } else {
      p = malloc_or_flush(want);
    }
    allocated_ += cls;
    peak_ = std::max(peak_, allocated_);
  }
  auto self = shared_from_this();
  return std::shared_ptr<void>(p, [self, cls, graph](void* q) { self->release(q, cls, graph); });
}

void CachingAllocator::release(void* p, size_t cls, bool graph_pool) {
  std::lock_guard<std::mutex> lk(mu_);
  allocated_ -= cls;
  (graph_pool ? graph_free_ : free_).emplace(cls, p);
}

void CachingAllocator::set_graph_capture(bool on) {
  std::lock_guard<std::mutex> lk(mu_);
  capturing_ = on;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lk(mu_);
  gpuSetDevice(device_);
  gpuDeviceSynchronize();  // blocks may still be read by queued work
  for (auto& [cls, p] : free_) {
    (void)gpuFree(p);
    reserved_ -= cls;
  }
  free_.clear();
}

MemoryStats CachingAllocator::stats() const {
  MemoryStats s;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s.allocated = allocated_;
    s.peak = peak_;
    s.reserved = reserved_;
    s.driver_allocations = driver_allocations_;
  }
  gpuSetDevice(device_);
  (void)gpuMemGetInfo(&s.free, &s.total);
  return s;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lk(mu_);
  peak_ = allocated_;
}

}  // namespace portllm::gpu
