// The CPU backend's Device: host memory (64-byte aligned), an inline stream, and memory stats
// from /proc/meminfo. Kernels run on the calling thread plus the global ThreadPool.
#pragma once
#include <atomic>

#include "backend/device.h"

namespace portllm {

class CpuDevice final : public Device {
 public:
  CpuDevice();
  DeviceKind kind() const override { return DeviceKind::CPU; }
  const DeviceCaps& caps() const override { return caps_; }
  std::shared_ptr<void> allocate_bytes(size_t bytes) override;
  void copy_to_device(void* dst, const void* src, size_t n, Stream* s) override;
  void copy_to_host(void* dst, const void* src, size_t n, Stream* s) override;
  void copy_on_device(void* dst, const void* src, size_t n, Stream* s) override;
  void memset(void* dst, int value, size_t n, Stream* s) override;
  Stream& stream() override { return stream_; }
  std::unique_ptr<Event> create_event() override;
  void synchronize() override {}
  MemoryStats memory_stats() const override;
  void reset_peak_memory() override { peak_ = allocated_.load(); }

 private:
  struct InlineStream final : Stream {
    void synchronize() override {}
  };
  DeviceCaps caps_;
  InlineStream stream_;
  std::atomic<size_t> allocated_{0}, peak_{0};
};

// Registers the "cpu" backend, the reference kernels and the optimized CPU kernels.
void register_cpu_backend();

}  // namespace portllm
