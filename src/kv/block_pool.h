// A fixed set of KV blocks with reference counts, a free list and the prefix-cache index.
//
// Free list order is the eviction order (front = reused first):
// - a released block that holds a hashed (full, computed) block goes to the BACK, and stays
//   findable through the prefix-cache map until allocate() takes it from the front, so cached
//   blocks are evicted least-recently-freed first (LRU);
// - a released block without a hash holds nothing reusable and goes to the FRONT, so it is
//   reused before any cached block is evicted.
// A cached free block that gets a prefix hit leaves the free list (touch()) without losing its
// hash. num_free_blocks() counts cached free blocks: they are free, only not yet overwritten.
#pragma once
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/kv_types.h"

namespace portllm {

class BlockPool {
 public:
  // block_size is in tokens; the backend chooses it (its preferred attention page size).
  BlockPool(int num_blocks, int block_size = 16);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  int num_free_blocks() const { return static_cast<int>(free_.size()); }
  int num_used_blocks() const { return num_blocks() - num_free_blocks(); }

  // Takes n blocks from the front of the free list, each with ref count 1; evicts their hashes.
  // Requires n <= num_free_blocks().
  std::vector<BlockId> allocate(int n);
  // One more holder of b (a prefix hit or a fork). A free block leaves the free list.
  void touch(BlockId b);
  // Drops one hold of each block, in order: with several blocks reaching zero, the first one
  // listed is evicted first.
  void free(std::span<const BlockId> blocks);

  // Prefix cache. cache() registers a held, full, computed block under its chained hash; it is a
  // no-op when b already carries that hash or when another block already owns the hash (both
  // hold the same K/V, one entry is enough).
  std::optional<BlockId> lookup(BlockHash hash) const;
  void cache(BlockId b, BlockHash hash);
  // Forgets every hash (e.g. after weights change). Held blocks stay held.
  void reset_prefix_cache();
  int num_cached_blocks() const { return static_cast<int>(cached_.size()); }

  // Introspection for tests and metrics.
  int ref_count(BlockId b) const { return block(b).ref; }
  bool is_free(BlockId b) const { return block(b).ref == 0; }
  std::optional<BlockHash> hash_of(BlockId b) const;
  std::vector<BlockId> free_list() const { return {free_.begin(), free_.end()}; }

 private:
  struct Block {
    int ref = 0;
    bool hashed = false;
    BlockHash hash = 0;
    std::list<BlockId>::iterator free_pos;  // valid while ref == 0
  };
  const Block& block(BlockId b) const;
  Block& block(BlockId b);
  void drop_hash(BlockId b);

  int block_size_;
  std::vector<Block> blocks_;
  std::list<BlockId> free_;
  std::unordered_map<BlockHash, BlockId> cached_;
};

}  // namespace portllm
