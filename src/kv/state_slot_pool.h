// Per-request recurrent state slots for hybrid models (linear attention / Gated DeltaNet layers
// keep a fixed-size state per sequence beside the paged KV cache). A request holds at most one
// slot from admission until it finishes or is preempted; the runner indexes its state tensors
// by slot and zeroes a slot's state when a request starts at position 0.
#pragma once
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/kv_types.h"

namespace portllm {

class StateSlotPool {
 public:
  explicit StateSlotPool(int num_slots);

  int num_slots() const { return num_slots_; }
  int num_free_slots() const { return static_cast<int>(free_.size()); }

  // The request's slot (a second call returns the same one), or nullopt when none is free.
  std::optional<int> allocate(RequestId id);
  // No-op for a request without a slot.
  void free(RequestId id);
  std::optional<int> slot_of(RequestId id) const;

 private:
  int num_slots_;
  std::vector<int> free_;  // stack: the most recently freed slot is reused first
  std::unordered_map<RequestId, int> owner_;
};

}  // namespace portllm
