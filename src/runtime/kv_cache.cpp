#include "runtime/kv_cache.h"

#include <cstdlib>
#include <string>
#include <utility>

#include "core/error.h"
#include "ops/op_args.h"

namespace portllm {

namespace {
// A cache dtype the backend cannot write is refused here, naming the dtype, rather than at the
// first step's KV_WRITE (a dtype no kernel writes, or one a new backend has no kernel for yet).
void require_kv_write_kernel(OpContext& ctx, DType dtype, int64_t page_size) {
  // KV_WRITE's descriptor from views without memory: only dtypes and the page size enter it.
  const Tensor kv = Tensor::view_of(nullptr, ctx.act_dtype, {1, 1, 1});
  const Tensor cache = Tensor::view_of(nullptr, dtype, {1, page_size, 1, 1});
  if (!ctx.dispatcher->try_select(KvWriteArgs{kv, kv, cache, cache, Tensor()}.desc()))
    PL_THROW("--kv-dtype {}: {} has no kernel for a KV cache of this dtype; f32, f16, bf16 and fp8 caches work "
             "on every backend", dtype_name(dtype), ctx.device->name());
}
// PORTLLM_KV_LAYOUT=hnd (read once; default nhd): each page of a paged K/V cache is stored head
// by head ([block, head, token, dim]) instead of token by token ([block, token, head, dim]),
// exposed as the same [block, token, head, dim] view with permuted strides, so every kernel (they
// all address the cache by its strides) reads it unchanged. What it is for: a decode tile of one
// KV head (16 tokens) is then one contiguous run of 16 rows instead of 16 rows a head-stride apart
// (e4m3 rows of 128 dims are 128 bytes). Measured on the H200 in the twenty-first session: the same
// kernel times and throughput as token-major pages (BENCHMARKS.md), so it stays opt-in. The
// twenty-fifth session saw the fp8 decode kernel at 256 x 1k keys take 164.8 us with it against
// 175.1 (one ops perf run, before that session's shared-memory alignment); with the aligned kernel
// the throughput workload is equal either way (twenty-sixth session, fp8 cache: 10,974 / 10,957 out
// tok/s against 10,953 / 10,955 token-major; BENCHMARKS.md has the command).
// tests/e2e/kv_layout_hnd.sh runs it end to end.
bool head_major_pages() {
  static const bool v = [] {
    const char* e = std::getenv("PORTLLM_KV_LAYOUT");
    const std::string s = e ? e : "nhd";
    if (s != "nhd" && s != "hnd") PL_THROW("PORTLLM_KV_LAYOUT={}: expected nhd or hnd", s);
    return s == "hnd";
  }();
  return v;
}

// A paged K or V cache [blocks, page, heads, dim], stored token- or head-major within a page.
Tensor paged_cache(Device& dev, DType dtype, int64_t blocks, int64_t page, int64_t heads, int64_t dim) {
  if (!head_major_pages()) return dev.zeros(dtype, {blocks, page, heads, dim});
  Tensor t = dev.zeros(dtype, {blocks, heads, page, dim});
  std::swap(t.shape[1], t.shape[2]);
  std::swap(t.strides[1], t.strides[2]);
  return t;
}
}  // namespace

KvCache::KvCache(OpContext& ctx, const std::vector<LayerCacheSpec>& spec, const KvCacheConfig& cfg) : cfg_(cfg) {
  using K = LayerCacheSpec::Kind;
  for (const auto& s : spec)
    if (s.kind == K::PagedKV || s.kind == K::PagedLatent) {
      require_kv_write_kernel(ctx, cfg.dtype, cfg.page_size);
      break;
    }
  for (const auto& s : spec) {
    LayerCache c;
    if (s.kind == K::PagedKV) {
      c.k = paged_cache(*ctx.device, cfg.dtype, cfg.num_blocks, cfg.page_size, s.num_kv_heads, s.head_dim_k);
      c.v = paged_cache(*ctx.device, cfg.dtype, cfg.num_blocks, cfg.page_size, s.num_kv_heads, s.head_dim_v);
      has_paged_ = true;
    } else if (s.kind == K::PagedLatent) {
      c.k = ctx.device->zeros(cfg.dtype, {cfg.num_blocks, cfg.page_size, 1, s.latent_dim});
      has_paged_ = true;
    } else if (s.kind == K::Recurrent) {
      PL_CHECK(cfg.num_state_slots > 0, "a recurrent layer needs state slots");
      for (auto& shape : s.state_shapes) {
        std::vector<int64_t> full{cfg.num_state_slots};
        full.insert(full.end(), shape.begin(), shape.end());
        c.state.push_back(ctx.device->zeros(s.state_dtype, full));
      }
      has_state_ = true;
    }
    layers_.push_back(std::move(c));
  }
}

int64_t KvCache::bytes_per_block(const std::vector<LayerCacheSpec>& spec, int64_t page_size, DType dtype) {
  int64_t b = 0;
  for (auto& s : spec) b += s.bytes_per_token(dtype) * page_size;
  return b;
}

int64_t KvCache::bytes_per_state_slot(const std::vector<LayerCacheSpec>& spec) {
  int64_t b = 0;
  for (auto& s : spec) b += s.state_bytes();
  return b;
}

}  // namespace portllm
