// What state a model keeps per layer between steps, so the runtime can size and allocate it:
// paged K/V (standard attention), a paged latent (MLA: one vector per token), or fixed-size
// recurrent state per request (linear attention: conv + delta-rule state), or nothing.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace portllm {

struct LayerCacheSpec {
  enum class Kind { None, PagedKV, PagedLatent, Recurrent };
  Kind kind = Kind::None;
  int64_t num_kv_heads = 0, head_dim_k = 0, head_dim_v = 0;  // PagedKV
  int64_t latent_dim = 0;                                    // PagedLatent
  std::vector<std::vector<int64_t>> state_shapes;            // Recurrent: per request
  DType state_dtype = DType::F32;

  // Bytes per token (paged kinds) for a cache dtype.
  int64_t bytes_per_token(DType cache_dtype) const {
    const int64_t es = int64_t(dtype_size(cache_dtype));
    if (kind == Kind::PagedKV) return num_kv_heads * (head_dim_k + head_dim_v) * es;
    if (kind == Kind::PagedLatent) return latent_dim * es;
    return 0;
  }
  // Bytes of recurrent state per request.
  int64_t state_bytes() const {
    int64_t total = 0;
    for (auto& s : state_shapes) {
      int64_t n = 1;
      for (auto d : s) n *= d;
      total += n * int64_t(dtype_size(state_dtype));
    }
    return total;
  }
};

// The allocated cache of one layer. PagedKV: k [NB, page, Hkv, Dk], v [NB, page, Hkv, Dv].
// PagedLatent: k [NB, page, 1, latent_dim] (v undefined). Recurrent: state[i] is
// [num_slots, state_shapes[i]...].
struct LayerCache {
  Tensor k, v;
  std::vector<Tensor> state;
};

}  // namespace portllm
