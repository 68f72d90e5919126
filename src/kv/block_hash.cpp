#include "kv/block_hash.h"

// Static-linking-only API: lets the streaming state live on the stack (no malloc per block).
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "core/error.h"

namespace portllm {

BlockHash hash_block(BlockHash parent, std::span<const TokenId> tokens,
                     std::optional<uint64_t> extra_key) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, &parent, sizeof(parent));
  XXH3_64bits_update(&state, tokens.data(), tokens.size_bytes());
  if (extra_key) {
    // A marker byte keeps "no key" and "key 0" apart.
    const uint8_t marker = 1;
    XXH3_64bits_update(&state, &marker, 1);
    XXH3_64bits_update(&state, &*extra_key, sizeof(*extra_key));
  }
  return XXH3_64bits_digest(&state);
}

std::vector<BlockHash> hash_full_blocks(std::span<const TokenId> tokens, int block_size,
                                        int num_blocks, std::optional<uint64_t> extra_key) {
  PL_CHECK(block_size > 0 && num_blocks >= 0 &&
               tokens.size() >= static_cast<size_t>(num_blocks) * block_size,
           "{} tokens cannot fill {} blocks of {}", tokens.size(), num_blocks, block_size);
  std::vector<BlockHash> hashes;
  hashes.reserve(num_blocks);
  BlockHash parent = kRootBlockHash;
  for (int i = 0; i < num_blocks; ++i) {
    parent = hash_block(parent, tokens.subspan(static_cast<size_t>(i) * block_size, block_size),
                        extra_key);
    hashes.push_back(parent);
  }
  return hashes;
}

}  // namespace portllm
