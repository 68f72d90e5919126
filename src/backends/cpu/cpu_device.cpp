#include "backends/cpu/cpu_device.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "backend/registry.h"
#include "backends/cpu/cpu_kernels.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/ref/ref_kernels.h"

namespace portllm {

namespace {
size_t meminfo_kb(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string k;
  size_t v = 0;
  std::string unit;
  while (in >> k >> v >> unit)
    if (k == key) return v;
  return 0;
}

struct CpuEvent final : Event {
  std::chrono::steady_clock::time_point t;
  void record(Stream&) override { t = std::chrono::steady_clock::now(); }
  void wait(Stream&) override {}
  void synchronize() override {}
  float elapsed_ms(const Event& since) const override {
    return std::chrono::duration<float, std::milli>(t - static_cast<const CpuEvent&>(since).t).count();
  }
};
}  // namespace

CpuDevice::CpuDevice() {
  caps_.kind = DeviceKind::CPU;
  caps_.vendor = "cpu";
  caps_.name = "host CPU";
  caps_.warp_size = 1;
  caps_.num_compute_units = ThreadPool::global().num_threads();
  caps_.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
  caps_.bf16_matmul = false;
  caps_.fp8 = false;
  caps_.preferred_page_size = 16;
  caps_.total_memory = meminfo_kb("MemTotal:") * 1024;
}

std::shared_ptr<void> CpuDevice::allocate_bytes(size_t bytes) {
  // Past 2^62 bytes no machine has the memory, and the rounding below would wrap.
  void* p = nullptr;
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (bytes < (size_t(1) << 62)) p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) throw OutOfMemory(fmt::format("cpu: out of memory allocating {} bytes", bytes));
  const size_t now = allocated_ += rounded;
  size_t prev = peak_.load();
  while (now > prev && !peak_.compare_exchange_weak(prev, now)) {}
  return std::shared_ptr<void>(p, [this, rounded](void* q) {
    std::free(q);
    allocated_ -= rounded;
  });
}

void CpuDevice::copy_to_device(void* dst, const void* src, size_t n, Stream*) { std::memcpy(dst, src, n); }
void CpuDevice::copy_to_host(void* dst, const void* src, size_t n, Stream*) { std::memcpy(dst, src, n); }
void CpuDevice::copy_on_device(void* dst, const void* src, size_t n, Stream*) { std::memmove(dst, src, n); }
void CpuDevice::memset(void* dst, int value, size_t n, Stream*) { std::memset(dst, value, n); }

std::unique_ptr<Event> CpuDevice::create_event() { return std::make_unique<CpuEvent>(); }

MemoryStats CpuDevice::memory_stats() const {
  MemoryStats s;
  s.allocated = allocated_.load();
  s.reserved = s.allocated;
  s.peak = peak_.load();
  s.free = meminfo_kb("MemAvailable:") * 1024;
  s.total = meminfo_kb("MemTotal:") * 1024;
  return s;
}

void register_cpu_backend() {
  static bool done = false;
  if (done) return;
  done = true;
  ref::register_reference_kernels();
  cpu::register_cpu_kernels();
  BackendRegistry::instance().add(
      {"cpu", [](int) { return std::make_shared<CpuDevice>(); }, [] { return 1; }});
}

}  // namespace portllm
