#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

using namespace portllm;

TEST(BlockHash, DeterministicAndSensitiveToEveryInput) {
  std::vector<TokenId> t = {1, 2, 3, 4};
  const BlockHash h = hash_block(kRootBlockHash, t);
  EXPECT_EQ(h, hash_block(kRootBlockHash, t));
  EXPECT_NE(h, hash_block(kRootBlockHash + 1, t));  // parent matters
  std::vector<TokenId> t2 = {1, 2, 3, 5};
  EXPECT_NE(h, hash_block(kRootBlockHash, t2));  // every token matters
  std::vector<TokenId> t3 = {2, 1, 3, 4};
  EXPECT_NE(h, hash_block(kRootBlockHash, t3));  // order matters
  // An extra key separates caches; "no key" differs from key 0.
  EXPECT_NE(h, hash_block(kRootBlockHash, t, 0));
  EXPECT_NE(hash_block(kRootBlockHash, t, 0), hash_block(kRootBlockHash, t, 1));
  EXPECT_EQ(hash_block(kRootBlockHash, t, 7), hash_block(kRootBlockHash, t, 7));
}

TEST(BlockHash, FullBlocksAreChained) {
  std::vector<TokenId> t = {10, 11, 12, 13, 14, 15, 16, 17, 18};  // 2 full blocks of 4 + 1
  auto hs = hash_full_blocks(t, 4, 2);
  ASSERT_EQ(hs.size(), 2u);
  const BlockHash b0 = hash_block(kRootBlockHash, std::span<const TokenId>(t).subspan(0, 4));
  const BlockHash b1 = hash_block(b0, std::span<const TokenId>(t).subspan(4, 4));
  EXPECT_EQ(hs[0], b0);
  EXPECT_EQ(hs[1], b1);

  // Same second block after a different first block: a different chain, so a different hash.
  std::vector<TokenId> u = t;
  u[0] = 99;
  auto hu = hash_full_blocks(u, 4, 2);
  EXPECT_NE(hu[0], hs[0]);
  EXPECT_NE(hu[1], hs[1]);
  // A change in the second block leaves the first one's hash alone.
  std::vector<TokenId> v = t;
  v[5] = 99;
  auto hv = hash_full_blocks(v, 4, 2);
  EXPECT_EQ(hv[0], hs[0]);
  EXPECT_NE(hv[1], hs[1]);
  // Salted chains differ from block 0 on.
  auto salted = hash_full_blocks(t, 4, 2, 42);
  EXPECT_NE(salted[0], hs[0]);
  EXPECT_NE(salted[1], hs[1]);
}

TEST(BlockHash, RejectsTooFewTokens) {
  std::vector<TokenId> t = {1, 2, 3};
  EXPECT_THROW(hash_full_blocks(t, 4, 1), portllm::Error);
  EXPECT_TRUE(hash_full_blocks(t, 4, 0).empty());
}
