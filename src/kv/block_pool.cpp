#include "kv/block_pool.h"

#include "core/error.h"

namespace portllm {

BlockPool::BlockPool(int num_blocks, int block_size) : block_size_(block_size) {
  if (num_blocks <= 0) PL_THROW("kv cache: num_blocks must be positive, got {}", num_blocks);
  if (block_size <= 0) PL_THROW("kv cache: block_size must be positive, got {}", block_size);
  blocks_.resize(num_blocks);
  for (BlockId b = 0; b < num_blocks; ++b) blocks_[b].free_pos = free_.insert(free_.end(), b);
}

const BlockPool::Block& BlockPool::block(BlockId b) const {
  PL_CHECK(b >= 0 && b < num_blocks(), "block id {} out of range [0, {})", b, num_blocks());
  return blocks_[b];
}
BlockPool::Block& BlockPool::block(BlockId b) {
  return const_cast<Block&>(static_cast<const BlockPool*>(this)->block(b));
}

std::vector<BlockId> BlockPool::allocate(int n) {
  PL_CHECK(n >= 0 && n <= num_free_blocks(), "allocate {} blocks with {} free", n,
           num_free_blocks());
  std::vector<BlockId> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    BlockId b = free_.front();
    free_.pop_front();
    drop_hash(b);  // its old content is about to be overwritten
    blocks_[b].ref = 1;
    out.push_back(b);
  }
  return out;
}

void BlockPool::touch(BlockId b) {
  Block& blk = block(b);
  if (blk.ref == 0) free_.erase(blk.free_pos);
  ++blk.ref;
}

void BlockPool::free(std::span<const BlockId> ids) {
  for (BlockId b : ids) {
    Block& blk = block(b);
    PL_CHECK(blk.ref > 0, "double free of block {}", b);
    if (--blk.ref > 0) continue;
    blk.free_pos = blk.hashed ? free_.insert(free_.end(), b) : free_.insert(free_.begin(), b);
  }
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::cache(BlockId b, BlockHash hash) {
  Block& blk = block(b);
  PL_CHECK(blk.ref > 0, "caching free block {}", b);
  if (blk.hashed) {
    PL_CHECK(blk.hash == hash, "block {} re-cached under a different hash", b);
    return;
  }
  if (cached_.count(hash)) return;
  blk.hashed = true;
  blk.hash = hash;
  cached_.emplace(hash, b);
}

void BlockPool::drop_hash(BlockId b) {
  Block& blk = blocks_[b];
  if (!blk.hashed) return;
  auto it = cached_.find(blk.hash);
  if (it != cached_.end() && it->second == b) cached_.erase(it);
  blk.hashed = false;
  blk.hash = 0;
}

void BlockPool::reset_prefix_cache() {
  cached_.clear();
  for (Block& blk : blocks_) {
    blk.hashed = false;
    blk.hash = 0;
  }
}

std::optional<BlockHash> BlockPool::hash_of(BlockId b) const {
  const Block& blk = block(b);
  if (!blk.hashed) return std::nullopt;
  return blk.hash;
}

}  // namespace portllm
