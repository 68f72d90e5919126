#include "kv/state_slot_pool.h"

#include <gtest/gtest.h>

#include "core/error.h"

using namespace portllm;

TEST(StateSlotPool, OneSlotPerRequestUntilFreed) {
  StateSlotPool p(2);
  EXPECT_EQ(p.num_free_slots(), 2);
  auto a = p.allocate(10);
  auto b = p.allocate(11);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(p.allocate(10), a);  // at most one slot per request
  EXPECT_EQ(p.num_free_slots(), 0);
  EXPECT_FALSE(p.allocate(12).has_value());
  p.free(10);
  EXPECT_FALSE(p.slot_of(10).has_value());
  EXPECT_EQ(p.allocate(12), a);  // the freed slot is reused
  EXPECT_EQ(p.slot_of(12), a);
  p.free(99);  // unknown: no-op
  p.free(11);
  p.free(12);
  EXPECT_EQ(p.num_free_slots(), 2);
}

TEST(StateSlotPool, ZeroSlotsAndBadCount) {
  StateSlotPool p(0);
  EXPECT_FALSE(p.allocate(1).has_value());
  EXPECT_THROW(StateSlotPool(-1), Error);
}
