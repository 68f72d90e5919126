#include "kv/state_slot_pool.h"

#include "core/error.h"

namespace portllm {

StateSlotPool::StateSlotPool(int num_slots) : num_slots_(num_slots) {
  if (num_slots < 0) PL_THROW("state slots: num_slots must be >= 0, got {}", num_slots);
  for (int s = num_slots - 1; s >= 0; --s) free_.push_back(s);  // slot 0 handed out first
}

std::optional<int> StateSlotPool::allocate(RequestId id) {
  if (auto it = owner_.find(id); it != owner_.end()) return it->second;
  if (free_.empty()) return std::nullopt;
  const int slot = free_.back();
  free_.pop_back();
  owner_.emplace(id, slot);
  return slot;
}

void StateSlotPool::free(RequestId id) {
  auto it = owner_.find(id);
  if (it == owner_.end()) return;
  free_.push_back(it->second);
  owner_.erase(it);
}

std::optional<int> StateSlotPool::slot_of(RequestId id) const {
  auto it = owner_.find(id);
  if (it == owner_.end()) return std::nullopt;
  return it->second;
}

}  // namespace portllm
