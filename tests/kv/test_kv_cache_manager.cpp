#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/error.h"

using namespace portllm;

namespace {

std::vector<TokenId> iota_tokens(int n, TokenId start = 0) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

SeqView view(RequestId id, const std::vector<TokenId>& t, int computed = 0) {
  return SeqView{id, t, computed, std::nullopt};
}

// Simulates one full prefill of `t` for request id (lookup, allocate, compute) and returns the hit.
CachedPrefix prefill(KvCacheManager& kv, RequestId id, const std::vector<TokenId>& t) {
  CachedPrefix hit = kv.get_computed_blocks(view(id, t));
  EXPECT_TRUE(kv.allocate_slots(view(id, t), int(t.size()) - hit.num_tokens, hit));
  return hit;
}

}  // namespace

TEST(KvCacheManager, TablesGrowBlockByBlock) {
  KvCacheManager kv(10, 4, false);
  auto t = iota_tokens(9);
  ASSERT_TRUE(kv.allocate_slots(view(1, t, 0), 5));  // 5 tokens -> 2 blocks
  EXPECT_EQ(kv.block_table(1).size(), 2u);
  ASSERT_TRUE(kv.allocate_slots(view(1, t, 5), 3));  // 8 tokens -> still 2
  EXPECT_EQ(kv.block_table(1).size(), 2u);
  ASSERT_TRUE(kv.allocate_slots(view(1, t, 8), 1));  // 9 -> 3
  EXPECT_EQ(kv.block_table(1).size(), 3u);
  EXPECT_EQ(kv.num_free_blocks(), 7);
  EXPECT_DOUBLE_EQ(kv.usage(), 0.3);
  EXPECT_THROW(kv.allocate_slots(view(1, t, 9), 1), Error);  // beyond known tokens
}

TEST(KvCacheManager, FailedAllocationLeavesNothingBehind) {
  KvCacheManager kv(3, 4, true);
  auto a = iota_tokens(8), b = iota_tokens(8, 100);
  prefill(kv, 1, a);  // 2 blocks
  auto table_before = kv.block_table(1);
  EXPECT_FALSE(kv.allocate_slots(view(2, b), 8));  // needs 2, 1 free
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_TRUE(kv.block_table(2).empty());
  EXPECT_EQ(kv.block_table(1), table_before);
  // Growing an existing table past the pool fails too, without partial growth.
  auto longer = iota_tokens(17);
  EXPECT_FALSE(kv.allocate_slots(view(1, longer, 8), 9));  // needs 3 more
  EXPECT_EQ(kv.block_table(1), table_before);
  EXPECT_EQ(kv.num_free_blocks(), 1);
}

TEST(KvCacheManager, FreeReturnsEveryBlockTailFirst) {
  KvCacheManager kv(6, 4, true);
  auto t = iota_tokens(14);  // blocks: 3 full + 1 partial
  prefill(kv, 1, t);
  const auto table = kv.block_table(1);
  ASSERT_EQ(table.size(), 4u);
  kv.free(view(1, t, 14));
  EXPECT_EQ(kv.num_free_blocks(), 6);
  EXPECT_FALSE(kv.is_tracked(1));
  EXPECT_EQ(kv.num_tracked_requests(), 0);
  for (BlockId b : table) EXPECT_EQ(kv.pool().ref_count(b), 0);
  // Partial block first (nothing to keep), then untouched blocks; the cached full blocks are at
  // the back, tail before head so that the prefix survives longest.
  auto fl = kv.pool().free_list();
  ASSERT_EQ(fl.size(), 6u);
  EXPECT_EQ(fl[0], table[3]);
  EXPECT_EQ(std::vector<BlockId>(fl.end() - 3, fl.end()),
            (std::vector<BlockId>{table[2], table[1], table[0]}));
  // Four new blocks: the old partial one, two never used, then the first eviction takes the
  // prompt's tail block; the two leading blocks still hit.
  auto other = iota_tokens(16, 500);
  ASSERT_TRUE(kv.allocate_slots(view(2, other), 16));
  EXPECT_EQ(kv.block_table(2)[3], table[2]);
  auto hit = kv.get_computed_blocks(view(3, t));
  EXPECT_EQ(hit.blocks, (std::vector<BlockId>{table[0], table[1]}));
}

TEST(KvCacheManager, PrefixHitsOnlyOnFullComputedBlocks) {
  KvCacheManager kv(20, 4, true);
  auto a = iota_tokens(10);  // 2 full blocks + 2 tokens
  EXPECT_EQ(prefill(kv, 1, a).num_tokens, 0);
  // Blocks become shareable once computed: after the step, the next allocation registers them.
  auto b = iota_tokens(10);
  b[9] = 77;  // same first 9 tokens
  EXPECT_EQ(kv.get_computed_blocks(view(2, b)).num_tokens, 0);  // a's K/V not yet known computed
  kv.free(view(2, b));
  a.push_back(5);                                        // a's sampled token
  ASSERT_TRUE(kv.allocate_slots(view(1, a, 10), 1));     // decode step registers a's full blocks
  auto hit = kv.get_computed_blocks(view(2, b));
  EXPECT_EQ(hit.num_tokens, 8);
  EXPECT_EQ(hit.blocks, (std::vector<BlockId>{kv.block_table(1)[0], kv.block_table(1)[1]}));
  ASSERT_TRUE(kv.allocate_slots(view(2, b), 2, hit));
  EXPECT_EQ(kv.pool().ref_count(hit.blocks[0]), 2);
  EXPECT_EQ(kv.pool().ref_count(hit.blocks[1]), 2);
  EXPECT_NE(kv.block_table(2)[2], kv.block_table(1)[2]);  // partial block is private
  EXPECT_EQ(kv.prefix_cache_queries(), 20);  // a's 10 (no hit) + b's 10
  EXPECT_EQ(kv.prefix_cache_hits(), 8);
}

TEST(KvCacheManager, NeverHitsTheWholePrompt) {
  KvCacheManager kv(20, 4, true);
  auto a = iota_tokens(8);  // exactly 2 blocks
  prefill(kv, 1, a);
  kv.free(view(1, a, 8));  // registers both blocks
  EXPECT_EQ(kv.pool().num_cached_blocks(), 2);
  auto hit = kv.get_computed_blocks(view(2, a));
  EXPECT_EQ(hit.num_tokens, 4);  // last token must be computed: one block less
  auto longer = iota_tokens(9);
  EXPECT_EQ(kv.get_computed_blocks(view(3, longer)).num_tokens, 8);
}

TEST(KvCacheManager, HitOnFreeCachedBlocksCountsAgainstCapacity) {
  KvCacheManager kv(3, 4, true);
  auto a = iota_tokens(9);
  prefill(kv, 1, a);  // 3 blocks
  kv.free(view(1, a, 9));
  EXPECT_EQ(kv.num_free_blocks(), 3);
  auto hit = kv.get_computed_blocks(view(2, a));
  ASSERT_EQ(hit.num_tokens, 8);
  // 2 hit blocks leave the free list + 1 fresh = 3: fits exactly.
  ASSERT_TRUE(kv.allocate_slots(view(2, a), 1, hit));
  EXPECT_EQ(kv.num_free_blocks(), 0);
  kv.free(view(2, a, 9));
  // Pool of 3, one block held elsewhere: the hit (2 free cached) + 1 fresh does not fit.
  auto c = iota_tokens(4, 900);
  ASSERT_TRUE(kv.allocate_slots(view(3, c), 4));  // takes the unhashed block first
  auto hit2 = kv.get_computed_blocks(view(2, a));
  ASSERT_EQ(hit2.num_tokens, 8);
  EXPECT_FALSE(kv.allocate_slots(view(2, a), 1, hit2));
  EXPECT_EQ(kv.num_free_blocks(), 2);
  // The failed admission did not evict or take the hit blocks.
  EXPECT_EQ(kv.pool().lookup(*kv.pool().hash_of(hit2.blocks[0])), hit2.blocks[0]);
  EXPECT_TRUE(kv.pool().is_free(hit2.blocks[0]));
}

TEST(KvCacheManager, SaltSeparatesCaches) {
  KvCacheManager kv(20, 4, true);
  auto a = iota_tokens(9);
  prefill(kv, 1, a);
  kv.free(view(1, a, 9));
  SeqView salted{2, a, 0, 123};
  EXPECT_EQ(kv.get_computed_blocks(salted).num_tokens, 0);
  EXPECT_EQ(kv.get_computed_blocks(view(3, a)).num_tokens, 8);
}

TEST(KvCacheManager, PrefixCachingOffNeverHits) {
  KvCacheManager kv(20, 4, false);
  auto a = iota_tokens(9);
  prefill(kv, 1, a);
  kv.free(view(1, a, 9));
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
  EXPECT_EQ(kv.get_computed_blocks(view(2, a)).num_tokens, 0);
  EXPECT_EQ(kv.prefix_cache_queries(), 0);
}

TEST(KvCacheManager, ForkSharesFullBlocksOnly) {
  KvCacheManager kv(20, 4, false);  // fork works without the prefix cache
  auto prompt = iota_tokens(10);
  prefill(kv, 1, prompt);  // parent computed the whole prompt (2 full + 1 partial block)
  auto parent_tokens = prompt;
  parent_tokens.push_back(42);  // its first sampled token
  const int shared = kv.fork(view(1, parent_tokens, 10), view(2, prompt));
  EXPECT_EQ(shared, 8);
  const auto& pt = kv.block_table(1);
  const auto& ct = kv.block_table(2);
  ASSERT_EQ(ct.size(), 2u);
  EXPECT_EQ(ct[0], pt[0]);
  EXPECT_EQ(ct[1], pt[1]);
  EXPECT_EQ(kv.pool().ref_count(pt[0]), 2);
  EXPECT_EQ(kv.pool().ref_count(pt[2]), 1);  // partial block not shared
  // The child computes its tail (2 tokens) into a private block.
  ASSERT_TRUE(kv.allocate_slots(view(2, prompt, 8), 2));
  EXPECT_NE(kv.block_table(2)[2], pt[2]);
  // Freeing the parent keeps shared blocks alive for the child.
  kv.free(view(1, parent_tokens, 10));
  EXPECT_EQ(kv.pool().ref_count(kv.block_table(2)[0]), 1);
  kv.free(view(2, prompt, 10));
  EXPECT_EQ(kv.num_free_blocks(), 20);
}

TEST(KvCacheManager, ForkStopsAtFirstDifferenceAndLastToken) {
  KvCacheManager kv(20, 4, false);
  auto prompt = iota_tokens(12);
  prefill(kv, 1, prompt);
  auto diff = prompt;
  diff[5] = 999;  // differs inside block 1
  EXPECT_EQ(kv.fork(view(1, prompt, 12), view(2, diff)), 4);
  // Exactly 3 blocks of equal prompt: the child keeps its last token to compute.
  EXPECT_EQ(kv.fork(view(1, prompt, 12), view(3, prompt)), 8);
  SeqView salted{4, prompt, 0, 5};
  EXPECT_EQ(kv.fork(view(1, prompt, 12), salted), 0);
  EXPECT_THROW(kv.fork(view(9, prompt, 12), view(5, prompt)), Error);  // unknown parent
}

TEST(KvCacheManager, ResetPrefixCacheThenReRegisters) {
  KvCacheManager kv(20, 4, true);
  auto a = iota_tokens(9);
  prefill(kv, 1, a);
  a.push_back(1);
  ASSERT_TRUE(kv.allocate_slots(view(1, a, 9), 1));  // registers 2 blocks
  EXPECT_EQ(kv.pool().num_cached_blocks(), 2);
  kv.reset_prefix_cache();
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
  EXPECT_EQ(kv.get_computed_blocks(view(2, a)).num_tokens, 0);
  kv.free(view(2, a));
  kv.free(view(1, a, 10));  // still-held full blocks are registered again on free
  EXPECT_EQ(kv.pool().num_cached_blocks(), 2);
}
