// Per-request block tables on top of a BlockPool (vLLM v1's KVCacheManager, nano-vllm's
// BlockManager).
//
// Token i of a request lives in block table[i / block_size] at offset i % block_size. A block is
// shared between tables only when it is FULL and COMPUTED in every table that holds it (a prefix
// hit or a fork), so nobody ever writes into a shared block and no copy-on-write is needed.
//
// Blocks are registered in the prefix cache only once their K/V has been computed by an earlier
// step (allocate_slots/free register blocks covered by num_computed_tokens), so a hit never
// depends on the order in which the runner writes K/V inside one batch.
#pragma once
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_types.h"

namespace portllm {

// What the KV cache needs to know about a request (sched/Request lives above this layer).
struct SeqView {
  RequestId id = 0;
  std::span<const TokenId> tokens;  // prompt + outputs so far
  int num_computed_tokens = 0;      // tokens whose K/V is in the request's blocks
  std::optional<uint64_t> cache_salt;
};

// Result of a prefix-cache lookup, handed back to allocate_slots to take the blocks.
struct CachedPrefix {
  std::vector<BlockId> blocks;
  int num_tokens = 0;          // blocks.size() * block_size
  int num_queried_tokens = 0;  // tokens that were looked up (for the hit-rate counters)
};

class KvCacheManager {
 public:
  KvCacheManager(int num_blocks, int block_size, bool enable_prefix_caching);

  // Longest run of cached FULL blocks at the start of seq.tokens, never covering the last token
  // (at least one token must be computed so that the step yields logits). Takes nothing: pass
  // the result to allocate_slots. Empty when prefix caching is off or seq already has blocks.
  CachedPrefix get_computed_blocks(const SeqView& seq);

  // Makes room for num_new_tokens more tokens after seq.num_computed_tokens (+ prefix.num_tokens
  // when a prefix from get_computed_blocks is given; then seq must hold no blocks yet and have
  // num_computed_tokens == 0). Returns false and changes nothing when the pool is too small.
  bool allocate_slots(const SeqView& seq, int num_new_tokens, const CachedPrefix& prefix = {});

  // Releases every block of seq, last block first so that a request's tail is evicted before its
  // prefix; full computed blocks are registered in the prefix cache first.
  void free(const SeqView& seq);

  // n > 1 sampling: child shares the parent's FULL computed blocks that cover the common token
  // prefix (never the child's last token) by ref count. The parent's partial last block is not
  // shared and not copied: the child recomputes those < block_size tokens itself, so the runner
  // needs no block-copy operation. Returns the number of tokens the child now has computed.
  int fork(const SeqView& parent, const SeqView& child);

  const std::vector<BlockId>& block_table(RequestId id) const;
  bool is_tracked(RequestId id) const { return seqs_.count(id) != 0; }
  int num_tracked_requests() const { return static_cast<int>(seqs_.size()); }

  int block_size() const { return pool_.block_size(); }
  int num_blocks() const { return pool_.num_blocks(); }
  int num_free_blocks() const { return pool_.num_free_blocks(); }
  int blocks_for_tokens(int num_tokens) const {
    return (num_tokens + block_size() - 1) / block_size();
  }
  // Fraction of blocks held by requests (cached free blocks count as free).
  double usage() const { return 1.0 - double(num_free_blocks()) / num_blocks(); }
  bool prefix_caching_enabled() const { return enable_prefix_caching_; }

  // Prefix-cache counters in tokens, counted when an admission with a lookup succeeds.
  int64_t prefix_cache_queries() const { return queries_; }
  int64_t prefix_cache_hits() const { return hits_; }
  void reset_prefix_cache();

  const BlockPool& pool() const { return pool_; }

 private:
  struct Seq {
    std::vector<BlockId> blocks;
    std::vector<BlockHash> hashes;  // chained hashes of the first full blocks, grown lazily
    int num_cached_blocks = 0;      // leading blocks already registered in the prefix cache
  };
  void ensure_hashes(Seq& s, const SeqView& seq, int num_blocks);
  void cache_computed_blocks(Seq& s, const SeqView& seq, int num_computed_tokens);

  BlockPool pool_;
  bool enable_prefix_caching_;
  std::unordered_map<RequestId, Seq> seqs_;
  int64_t queries_ = 0;
  int64_t hits_ = 0;
};

}  // namespace portllm
