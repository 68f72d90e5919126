// The GPU backend's Device: a caching allocator, a main stream, optional auxiliary and upload streams,
// events, a BLAS handle, and DeviceCaps filled from the device's properties. Vendor calls go
// through vendor/vendor.h only.
#pragma once
#include <memory>

#include "backend/device.h"
#include "backends/gpu/gpu_allocator.h"
#include "backends/gpu/vendor/vendor.h"

namespace portllm::gpu {

class GpuDevice;

// A vendor stream that knows its device, so kernels (which receive only a Stream&) can reach the
// device's allocator and BLAS handle.
class GpuStream final : public Stream {
 public:
  GpuStream(GpuDevice& dev, gpuStream_t s) : dev_(dev), s_(s) {}
  void synchronize() override;
  void* native() override { return s_; }
  gpuStream_t get() const { return s_; }
  GpuDevice& device() const { return dev_; }

 private:
  GpuDevice& dev_;
  gpuStream_t s_;
};

class GpuDevice final : public Device {
 public:
  explicit GpuDevice(int index);
  ~GpuDevice() override;
  DeviceKind kind() const override { return caps_.kind; }
  int index() const override { return index_; }
  const DeviceCaps& caps() const override { return caps_; }
  std::shared_ptr<void> allocate_bytes(size_t bytes) override { return alloc_->allocate(bytes); }
  std::shared_ptr<void> allocate_host(size_t bytes) override;  // page-locked
  void copy_to_device(void* dst, const void* src, size_t n, Stream* s) override;
  void copy_to_host(void* dst, const void* src, size_t n, Stream* s) override;
  void copy_on_device(void* dst, const void* src, size_t n, Stream* s) override;
  void memset(void* dst, int value, size_t n, Stream* s) override;
  Stream& stream() override { return *main_; }
  Stream* aux_stream() override { return aux_.get(); }
  Stream* upload_stream() override { return upload_.get(); }
  std::unique_ptr<Event> create_event() override;
  void synchronize() override;
  MemoryStats memory_stats() const override { return alloc_->stats(); }
  void reset_peak_memory() override { alloc_->reset_peak(); }
  void empty_cache() override { alloc_->empty_cache(); }
  void evict_caches(Stream& s) override;
  std::unique_ptr<Graph> capture(Stream& s, const std::function<void()>& fn) override;

  gpublasHandle_t blas(gpuStream_t s);  // the device's BLAS handle bound to stream s
  void make_current() const;

 private:
  gpuStream_t native(Stream* s) const;
  int index_;
  DeviceCaps caps_;
  std::shared_ptr<CachingAllocator> alloc_;
  std::unique_ptr<GpuStream> main_, aux_, upload_;
  gpublasHandle_t blas_ = nullptr;
  std::shared_ptr<void> evict_buf_;  // evict_caches' 256 MiB, allocated on first use
};

// Devices the vendor runtime reports; 0 when there is no device or no driver.
int device_count();

}  // namespace portllm::gpu
