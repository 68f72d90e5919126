#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "core/error.h"

namespace portllm {

KvCacheManager::KvCacheManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : pool_(num_blocks, block_size), enable_prefix_caching_(enable_prefix_caching) {}

void KvCacheManager::ensure_hashes(Seq& s, const SeqView& seq, int num_blocks) {
  const int bs = block_size();
  while (static_cast<int>(s.hashes.size()) < num_blocks) {
    const size_t i = s.hashes.size();
    const BlockHash parent = s.hashes.empty() ? kRootBlockHash : s.hashes.back();
    s.hashes.push_back(hash_block(parent, seq.tokens.subspan(i * bs, bs), seq.cache_salt));
  }
}

void KvCacheManager::cache_computed_blocks(Seq& s, const SeqView& seq, int num_computed_tokens) {
  if (!enable_prefix_caching_) return;
  const int full = std::min<int>(num_computed_tokens / block_size(), s.blocks.size());
  if (full <= s.num_cached_blocks) return;
  ensure_hashes(s, seq, full);
  for (int i = s.num_cached_blocks; i < full; ++i) pool_.cache(s.blocks[i], s.hashes[i]);
  s.num_cached_blocks = full;
}

CachedPrefix KvCacheManager::get_computed_blocks(const SeqView& seq) {
  CachedPrefix out;
  if (!enable_prefix_caching_ || seq.tokens.empty()) return out;
  Seq& s = seqs_[seq.id];
  if (!s.blocks.empty()) return out;
  // Never the whole sequence: the last token must be computed to produce logits.
  const int max_blocks = static_cast<int>(seq.tokens.size() - 1) / block_size();
  ensure_hashes(s, seq, max_blocks);
  for (int i = 0; i < max_blocks; ++i) {
    auto b = pool_.lookup(s.hashes[i]);
    if (!b) break;
    out.blocks.push_back(*b);
  }
  out.num_tokens = static_cast<int>(out.blocks.size()) * block_size();
  out.num_queried_tokens = static_cast<int>(seq.tokens.size());
  return out;
}

bool KvCacheManager::allocate_slots(const SeqView& seq, int num_new_tokens,
                                    const CachedPrefix& prefix) {
  PL_CHECK(num_new_tokens >= 0, "negative token count {}", num_new_tokens);
  Seq& s = seqs_[seq.id];
  if (!prefix.blocks.empty())
    PL_CHECK(s.blocks.empty() && seq.num_computed_tokens == 0,
             "request {}: a cached prefix can only start an empty block table", seq.id);
  const int total = seq.num_computed_tokens + prefix.num_tokens + num_new_tokens;
  PL_CHECK(total <= static_cast<int>(seq.tokens.size()),
           "request {}: allocating for {} tokens but only {} are known", seq.id, total,
           seq.tokens.size());
  const int have = static_cast<int>(s.blocks.size() + prefix.blocks.size());
  const int num_new_blocks = std::max(0, blocks_for_tokens(total) - have);
  // Hit blocks sitting in the free list are taken out of it, so they use up free capacity too.
  const int hits_in_free_list = static_cast<int>(std::count_if(
      prefix.blocks.begin(), prefix.blocks.end(), [&](BlockId b) { return pool_.is_free(b); }));
  if (num_new_blocks + hits_in_free_list > pool_.num_free_blocks()) return false;

  for (BlockId b : prefix.blocks) pool_.touch(b);  // before allocate(): hits must not be evicted
  s.blocks.insert(s.blocks.end(), prefix.blocks.begin(), prefix.blocks.end());
  if (!prefix.blocks.empty()) s.num_cached_blocks = static_cast<int>(prefix.blocks.size());
  std::vector<BlockId> fresh = pool_.allocate(num_new_blocks);
  s.blocks.insert(s.blocks.end(), fresh.begin(), fresh.end());

  if (prefix.num_queried_tokens > 0) {
    queries_ += prefix.num_queried_tokens;
    hits_ += prefix.num_tokens;
  }
  // Blocks filled by earlier steps are safe to share from now on.
  cache_computed_blocks(s, seq, seq.num_computed_tokens + prefix.num_tokens);
  return true;
}

void KvCacheManager::free(const SeqView& seq) {
  auto it = seqs_.find(seq.id);
  if (it == seqs_.end()) return;
  Seq& s = it->second;
  cache_computed_blocks(s, seq, seq.num_computed_tokens);
  std::vector<BlockId> reversed(s.blocks.rbegin(), s.blocks.rend());
  pool_.free(reversed);
  seqs_.erase(it);
}

int KvCacheManager::fork(const SeqView& parent, const SeqView& child) {
  auto pit = seqs_.find(parent.id);
  PL_CHECK(pit != seqs_.end(), "fork: parent request {} holds no blocks", parent.id);
  PL_CHECK(parent.id != child.id, "fork: child id equals parent id {}", parent.id);
  Seq& p = pit->second;
  Seq& c = seqs_[child.id];
  PL_CHECK(c.blocks.empty(), "fork: child request {} already holds blocks", child.id);
  // Different salts mean different K/V for equal tokens (e.g. another adapter): share nothing.
  if (child.tokens.empty() || parent.cache_salt != child.cache_salt) return 0;

  // Shareable: tokens the parent has computed, that the child has too, except the child's last.
  const size_t limit = std::min<size_t>(parent.num_computed_tokens, child.tokens.size() - 1);
  const size_t common = std::mismatch(parent.tokens.begin(), parent.tokens.begin() + limit,
                                      child.tokens.begin())
                            .first -
                        parent.tokens.begin();
  const int num_blocks = std::min<int>(common / block_size(), p.blocks.size());
  for (int i = 0; i < num_blocks; ++i) pool_.touch(p.blocks[i]);
  c.blocks.assign(p.blocks.begin(), p.blocks.begin() + num_blocks);
  const int known = std::min<int>(num_blocks, p.hashes.size());
  c.hashes.assign(p.hashes.begin(), p.hashes.begin() + known);
  c.num_cached_blocks = std::min(num_blocks, p.num_cached_blocks);
  return num_blocks * block_size();
}

const std::vector<BlockId>& KvCacheManager::block_table(RequestId id) const {
  static const std::vector<BlockId> kEmpty;
  auto it = seqs_.find(id);
  return it == seqs_.end() ? kEmpty : it->second.blocks;
}

void KvCacheManager::reset_prefix_cache() {
  pool_.reset_prefix_cache();
  // Held full blocks get registered again on their owner's next allocation or free.
  for (auto& [id, s] : seqs_) s.num_cached_blocks = 0;
}

}  // namespace portllm
