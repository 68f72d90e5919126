// Host buffers for the small copies a step makes between host and device (decode-graph inputs,
// sampling parameters, sampled ids) while the device may still run the previous step.
//
// A copy between the device and pageable memory may make the host wait for the stream (a
// download always does); with page-locked memory (Device::allocate_host) it does not, but then
// the buffer must not be touched until the copy has run. So each buffer carries an event the
// caller records after its copy, and acquire() hands a buffer out again only after that event
// (normally long passed: with `slots` buffers in turn, a step reuses the one of `slots` steps ago).
#pragma once
#include <memory>
#include <vector>

#include "backend/device.h"

namespace portllm {

struct StagingBuffer {
  void* data = nullptr;
  Event* done = nullptr;  // record after the copy that uses `data`; synchronize before reading a download
};

class HostStaging {
 public:
  HostStaging(Device& dev, int slots);
  // The next buffer in turn, at least `bytes` long, once its previous copy has run.
  StagingBuffer acquire(size_t bytes);

 private:
  struct Slot {
    std::shared_ptr<void> mem;
    size_t capacity = 0;
    std::unique_ptr<Event> done;
  };
  Device& dev_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

}  // namespace portllm
