// Device memory for a model's per-layer cache: paged K/V or latent blocks (num_blocks pages of
// page_size tokens, shared by all requests through block tables) and recurrent-state slots.
#pragma once
#include <vector>

#include "model/cache_spec.h"
#include "ops/registry.h"

namespace portllm {

struct KvCacheConfig {
  int64_t num_blocks = 0;
  int64_t page_size = 16;
  DType dtype = DType::F32;   // K/V element type
  int64_t num_state_slots = 0;
};

class KvCache {
 public:
  KvCache(OpContext& ctx, const std::vector<LayerCacheSpec>& spec, const KvCacheConfig& cfg);
  std::vector<LayerCache>& layers() { return layers_; }
  const KvCacheConfig& config() const { return cfg_; }
  // Bytes of paged cache per block (all layers) and of state per slot (all layers).
  static int64_t bytes_per_block(const std::vector<LayerCacheSpec>& spec, int64_t page_size, DType dtype);
  static int64_t bytes_per_state_slot(const std::vector<LayerCacheSpec>& spec);
  bool has_paged_layers() const { return has_paged_; }
  bool has_state_layers() const { return has_state_; }

 private:
  KvCacheConfig cfg_;
  std::vector<LayerCache> layers_;
  bool has_paged_ = false, has_state_ = false;
};

}  // namespace portllm
