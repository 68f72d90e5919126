// The backend interface: a Device allocates memory, copies, and owns streams. Kernels are not
// methods of Device: they are registered in the op registry (ops/registry.h) per DeviceKind.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/device_caps.h"
#include "core/tensor.h"

namespace portllm {

// An ordered queue of device work. CPU streams run work inline (synchronously).
class Stream {
 public:
  virtual ~Stream() = default;
  virtual void synchronize() = 0;
  virtual void* native() { return nullptr; }  // cudaStream_t / musaStream_t for GPU kernels
};

class Event {
 public:
  virtual ~Event() = default;
  virtual void record(Stream& s) = 0;
  virtual void wait(Stream& s) = 0;  // make s wait for this event
  virtual void synchronize() = 0;
  virtual float elapsed_ms(const Event& since) const = 0;
};

// Device work captured once and replayed with one launch (CUDA/MUSA graphs): what removes the
// per-kernel launch cost of decode steps.
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void replay(Stream& s) = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual int index() const { return 0; }
  virtual const DeviceCaps& caps() const = 0;
  std::string name() const;  // "cpu", "cuda:0"

  // Raw memory; the returned owner frees (or returns to a cache) on release.
  virtual std::shared_ptr<void> allocate_bytes(size_t bytes) = 0;
  Tensor empty(DType dtype, std::vector<int64_t> shape);
  Tensor zeros(DType dtype, std::vector<int64_t> shape);

  // Host memory this device copies to and from without blocking the host (page-locked on GPUs;
  // plain memory here). A copy into or out of it may return before it runs: read what
  // copy_to_host wrote only after the stream or an event is synchronized, and rewrite what
  // copy_to_device reads only once that copy has run. (A download into pageable memory blocks
  // the host until the stream reaches it; that is what the engine's step pipeline avoids.)
  virtual std::shared_ptr<void> allocate_host(size_t bytes);

  // Copies between host memory and this device, ordered on `stream` (default stream if null).
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes, Stream* s = nullptr) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes, Stream* s = nullptr) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t bytes, Stream* s = nullptr) = 0;
  virtual void memset(void* dst, int value, size_t bytes, Stream* s = nullptr) = 0;

  // Tensor helpers (contiguous tensors only).
  Tensor upload(const Tensor& host);             // host tensor -> new device tensor
  Tensor download(const Tensor& dev);            // device tensor -> new host tensor
  void copy(const Tensor& dst, const Tensor& src);  // same-size copy in any direction

  virtual Stream& stream() = 0;                       // the main stream
  virtual Stream* aux_stream() { return nullptr; }    // optional; callers run sequentially if null
  // Optional; host->device copies of inputs built ahead of the main stream that reads them
  // (backend/ahead_upload.h), kept apart from the auxiliary stream so that they never queue behind
  // its downloads. Callers upload on the main stream if null.
  virtual Stream* upload_stream() { return nullptr; }
  virtual std::unique_ptr<Event> create_event() = 0;
  virtual void synchronize() = 0;

  // Captures the work fn enqueues on s into a graph instead of running it. Memory allocated during
  // the capture comes from a pool reserved for graphs (never handed to work outside them), so a
  // replay cannot overwrite tensors that live across it. nullptr: this device has no graphs.
  virtual std::unique_ptr<Graph> capture(Stream& s, const std::function<void()>& fn) {
    (void)s;
    (void)fn;
    return nullptr;
  }

  virtual MemoryStats memory_stats() const = 0;
  virtual void reset_peak_memory() {}
  virtual void empty_cache() {}

  // Timing aid: enqueues on s work that leaves the device's caches without the data of earlier
  // work (reads only, so no dirty lines' write-back lands on the next kernel), so the next kernel
  // finds its operands in memory, as a model step finds its weights and KV cache. No-op where
  // there is nothing to evict.
  virtual void evict_caches(Stream& s) { (void)s; }
};

}  // namespace portllm
