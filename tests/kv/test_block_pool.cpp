#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"

using namespace portllm;

TEST(BlockPool, RejectsBadSizes) {
  EXPECT_THROW(BlockPool(0, 16), Error);
  EXPECT_THROW(BlockPool(4, 0), Error);
  BlockPool p(4);
  EXPECT_EQ(p.block_size(), 16);  // default
}

TEST(BlockPool, AllocateTakesFromFrontWithRefOne) {
  BlockPool p(5, 4);
  EXPECT_EQ(p.num_free_blocks(), 5);
  auto a = p.allocate(3);
  EXPECT_EQ(a, (std::vector<BlockId>{0, 1, 2}));
  for (BlockId b : a) EXPECT_EQ(p.ref_count(b), 1);
  EXPECT_EQ(p.num_free_blocks(), 2);
  EXPECT_EQ(p.num_used_blocks(), 3);
  EXPECT_THROW(p.allocate(3), Error);  // more than free
  EXPECT_EQ(p.num_free_blocks(), 2);
}

TEST(BlockPool, RefCountsTouchAndFree) {
  BlockPool p(3, 4);
  auto a = p.allocate(1);
  p.touch(a[0]);
  EXPECT_EQ(p.ref_count(a[0]), 2);
  p.free(a);
  EXPECT_EQ(p.ref_count(a[0]), 1);
  EXPECT_FALSE(p.is_free(a[0]));
  EXPECT_EQ(p.num_free_blocks(), 2);
  p.free(a);
  EXPECT_TRUE(p.is_free(a[0]));
  EXPECT_EQ(p.num_free_blocks(), 3);
  EXPECT_THROW(p.free(a), Error);  // double free
  EXPECT_THROW(p.ref_count(7), Error);
}

TEST(BlockPool, UnhashedFreedBlocksAreReusedBeforeCachedOnes) {
  BlockPool p(4, 4);
  auto a = p.allocate(4);  // 0 1 2 3
  p.cache(a[0], 100);
  p.cache(a[1], 101);
  std::vector<BlockId> order = {0, 2, 1, 3};
  p.free(order);
  // Cached 0 then 1 at the back (LRU), unhashed 2 then 3 pushed to the front.
  EXPECT_EQ(p.free_list(), (std::vector<BlockId>{3, 2, 0, 1}));
  auto b = p.allocate(2);
  EXPECT_EQ(b, (std::vector<BlockId>{3, 2}));
  EXPECT_EQ(p.lookup(100), 0);  // both cached blocks still findable
  EXPECT_EQ(p.lookup(101), 1);
}

TEST(BlockPool, CachedFreeBlocksAreEvictedLeastRecentlyFreedFirst) {
  BlockPool p(3, 4);
  auto a = p.allocate(3);
  for (BlockId b : a) p.cache(b, 1000 + b);
  // Free 2, then 0, then 1: eviction order must be the same.
  for (BlockId b : {2, 0, 1}) p.free(std::vector<BlockId>{b});
  EXPECT_EQ(p.free_list(), (std::vector<BlockId>{2, 0, 1}));
  EXPECT_EQ(p.num_cached_blocks(), 3);
  EXPECT_EQ(p.allocate(1), std::vector<BlockId>{2});
  EXPECT_FALSE(p.lookup(1002).has_value());  // evicted: hash gone
  EXPECT_FALSE(p.hash_of(2).has_value());
  EXPECT_EQ(p.lookup(1000), 0);
  EXPECT_EQ(p.allocate(1), std::vector<BlockId>{0});
  EXPECT_FALSE(p.lookup(1000).has_value());
  EXPECT_EQ(p.lookup(1001), 1);
  EXPECT_EQ(p.num_cached_blocks(), 1);
}

TEST(BlockPool, PrefixHitRevivesFreeCachedBlock) {
  BlockPool p(3, 4);
  auto a = p.allocate(1);
  p.cache(a[0], 555);
  p.free(a);
  EXPECT_EQ(p.num_free_blocks(), 3);  // cached but free
  auto hit = p.lookup(555);
  ASSERT_TRUE(hit.has_value());
  p.touch(*hit);  // leaves the free list, keeps the hash
  EXPECT_EQ(p.ref_count(*hit), 1);
  EXPECT_EQ(p.num_free_blocks(), 2);
  EXPECT_EQ(p.hash_of(*hit), 555u);
  // Allocating everything else never takes the revived block.
  auto rest = p.allocate(2);
  EXPECT_EQ(std::count(rest.begin(), rest.end(), *hit), 0);
  EXPECT_EQ(p.lookup(555), *hit);
}

TEST(BlockPool, CacheIsIdempotentAndFirstOwnerWins) {
  BlockPool p(2, 4);
  auto a = p.allocate(2);
  p.cache(a[0], 9);
  p.cache(a[0], 9);  // no-op
  EXPECT_THROW(p.cache(a[0], 10), Error);
  p.cache(a[1], 9);  // same content elsewhere: first owner keeps the entry
  EXPECT_EQ(p.lookup(9), a[0]);
  EXPECT_FALSE(p.hash_of(a[1]).has_value());
  // Evicting a block that does not own the entry leaves the entry alone.
  p.free(std::vector<BlockId>{a[1]});
  p.allocate(1);
  EXPECT_EQ(p.lookup(9), a[0]);
  std::vector<BlockId> freed = {a[0]};
  p.free(freed);
  EXPECT_THROW(p.cache(a[0], 9), Error);  // only held blocks are cached
}

TEST(BlockPool, ResetPrefixCacheForgetsAllHashes) {
  BlockPool p(3, 4);
  auto a = p.allocate(2);
  p.cache(a[0], 1);
  p.cache(a[1], 2);
  p.free(std::vector<BlockId>{a[1]});
  p.reset_prefix_cache();
  EXPECT_EQ(p.num_cached_blocks(), 0);
  EXPECT_FALSE(p.lookup(1).has_value());
  EXPECT_FALSE(p.lookup(2).has_value());
  EXPECT_EQ(p.ref_count(a[0]), 1);  // still held
  EXPECT_EQ(p.num_free_blocks(), 2);
}
