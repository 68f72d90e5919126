#include "backend/ahead_upload.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "core/error.h"

namespace portllm {

namespace {
// PORTLLM_AHEAD_UPLOAD=0 uploads on the main stream (A/B measurements).
bool ahead_upload_allowed() {
  const char* v = std::getenv("PORTLLM_AHEAD_UPLOAD");
  return !(v && std::string_view(v) == "0");
}
}  // namespace

AheadUpload::AheadUpload(Device& dev, Stream& main, int slots) : dev_(dev), main_(main), slots_(size_t(slots)) {
  PL_CHECK(slots >= 1, "AheadUpload: needs at least one slot, got {}", slots);
  if (ahead_upload_allowed()) up_ = dev.upload_stream();
  if (!up_) return;
  for (Buffers& b : slots_) {
    b.uploaded = dev_.create_event();
    b.read = dev_.create_event();
  }
}

AheadUpload::Slot AheadUpload::next(size_t bytes) {
  PL_CHECK(enabled(), "AheadUpload: the device has no upload stream");
  cur_ = (cur_ + 1) % slots_.size();
  Buffers& b = slots_[cur_];
  b.uploaded->synchronize();  // the host buffer's last copy has run (an event never recorded has passed)
  if (b.capacity < bytes) {
    // Grow by half again, so a batch that creeps up does not reallocate every step.
    b.capacity = std::max(bytes, b.capacity + b.capacity / 2);
    b.host = dev_.allocate_host(b.capacity);
    b.device = dev_.allocate_bytes(b.capacity);
    b.read->record(main_);  // the allocation point: earlier main-stream users of the block
  }
  return {b.host.get(), b.device.get(), b.device};
}

void AheadUpload::commit(size_t bytes) {
  Buffers& b = slots_[cur_];
  PL_CHECK(bytes <= b.capacity, "AheadUpload: {} bytes committed to a slot of {}", bytes, b.capacity);
  b.read->wait(*up_);
  dev_.copy_to_device(b.device.get(), b.host.get(), bytes, up_);
  b.uploaded->record(*up_);
  b.uploaded->wait(main_);
}

void AheadUpload::release() { slots_[cur_].read->record(main_); }

}  // namespace portllm
