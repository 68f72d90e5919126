#include "backend/host_staging.h"

#include <algorithm>

#include "core/error.h"

namespace portllm {

HostStaging::HostStaging(Device& dev, int slots) : dev_(dev), slots_(size_t(slots)) {
  PL_CHECK(slots >= 1, "HostStaging: needs at least one buffer, got {}", slots);
  for (Slot& s : slots_) s.done = dev_.create_event();
}

StagingBuffer HostStaging::acquire(size_t bytes) {
  Slot& s = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  s.done->synchronize();  // an event never recorded has nothing to wait for
  if (s.capacity < bytes) {
    // Grow by half again, so a batch that creeps up does not reallocate every step.
    s.capacity = std::max(bytes, s.capacity + s.capacity / 2);
    s.mem = dev_.allocate_host(s.capacity);
  }
  return {s.mem.get(), s.done.get()};
}

}  // namespace portllm
