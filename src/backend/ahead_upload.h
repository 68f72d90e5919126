// Small inputs the host builds for a step (decode-graph inputs, sampling parameters), uploaded on
// the device's upload stream while the main stream still runs the step before, into device
// buffers owned here. The main stream then only waits for an upload that has long finished,
// instead of running the copy between two steps (a host->device copy on the main stream costs
// ~10-20 us of idle device between the kernels around it, on every decode step).
//
// Each slot is a page-locked host buffer and a device buffer, used in turn:
//   Slot s = up.next(bytes);   // waits until the slot's previous upload has left the host buffer
//   ... write s.host ...
//   up.commit(bytes);          // upload stream: wait for the slot's last reader, copy; main waits for the copy
//   ... enqueue the main-stream work that reads s.device ...
//   up.release();              // that work is the slot's reader: the next upload into it waits for it
// With `slots` in turn, an upload waits for the reader of `slots` steps ago, normally done.
//
// A device buffer comes from the stream-ordered caching allocator, whose blocks main-stream work
// enqueued earlier may still use; the first upload into a new buffer therefore waits for the main
// stream to reach the point where it was allocated.
//
// Without an upload stream (the CPU, a GPU that could not create it, or PORTLLM_AHEAD_UPLOAD=0)
// enabled() is false and callers upload on the main stream as before.
#pragma once
#include <memory>
#include <vector>

#include "backend/device.h"

namespace portllm {

class AheadUpload {
 public:
  // main: the stream that reads the uploads.
  AheadUpload(Device& dev, Stream& main, int slots);
  bool enabled() const { return up_ != nullptr; }

  struct Slot {
    void* host = nullptr;
    void* device = nullptr;
    std::shared_ptr<void> owner;  // keeps the device buffer alive (views of it take it as owner)
  };
  // The next slot in turn, with room for `bytes`. Requires enabled().
  Slot next(size_t bytes);
  // Uploads the first `bytes` of the slot next() returned, and makes the main stream wait for it.
  void commit(size_t bytes);
  // Marks the main-stream work enqueued since commit() as the slot's reader.
  void release();

 private:
  struct Buffers {
    std::shared_ptr<void> host, device;
    size_t capacity = 0;
    std::unique_ptr<Event> uploaded;  // upload stream: the copy into `device` (and out of `host`) ran
    std::unique_ptr<Event> read;      // main stream: the slot's reader ran (or, new buffer, its allocation point)
  };
  Device& dev_;
  Stream& main_;
  Stream* up_ = nullptr;
  std::vector<Buffers> slots_;
  size_t cur_ = 0;
};

}  // namespace portllm
