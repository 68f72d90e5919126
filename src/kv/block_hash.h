// Chained hashes of full KV blocks: the key of the prefix cache.
//
// hash(block i) = XXH3_64(hash(block i-1), token ids of block i, optional extra key)
// Chaining makes a block's hash depend on every token before it, so equal hashes mean equal
// prefixes (not only equal blocks), which is what KV reuse needs: a token's K/V depends on all
// tokens before it. The extra key separates caches that must not mix although their tokens are
// equal (a LoRA adapter, a per-tenant cache salt).
//
// Collisions: 64-bit XXH3, no token re-check. With a million cached blocks the chance of any
// collision is about 3e-8; accepted, as in vLLM's non-cryptographic hash mode.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kv/kv_types.h"

namespace portllm {

using BlockHash = uint64_t;

// Parent of the first block of every sequence, so equal first blocks hash equally everywhere.
inline constexpr BlockHash kRootBlockHash = 0x9e3779b97f4a7c15ULL;

BlockHash hash_block(BlockHash parent, std::span<const TokenId> tokens,
                     std::optional<uint64_t> extra_key = std::nullopt);

// Hashes of the first `num_blocks` full blocks of `tokens` (tokens.size() >= num_blocks * block_size).
std::vector<BlockHash> hash_full_blocks(std::span<const TokenId> tokens, int block_size,
                                        int num_blocks,
                                        std::optional<uint64_t> extra_key = std::nullopt);

}  // namespace portllm
