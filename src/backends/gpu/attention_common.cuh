// What the attention kernel files share: the kernel parameter block, paged-cache addressing and
// the host-side conversion from AttentionArgs. Portable CUDA C++ (MUSA compiles it unchanged).
#pragma once
#include <algorithm>
#include <cstdint>

#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args.h"

namespace portllm::gpu {

struct AttnParams {
  const void* q;
  void* out;
  const void* k_cache;
  const void* v_cache;
  const int32_t* block_tables;
  const int32_t* seq_lens;
  const int32_t* qsl;
  // [B] or null: the sequence grid row y serves (AttentionArgs::work_order; only the tensor-core
  // decode kernel reads it).
  const int32_t* work_order;
  int64_t q_s0, q_s1, o_s0, o_s1;
  int64_t kc_s0, kc_s1, kc_s2, vc_s0, vc_s1, vc_s2;  // [NB, page, H, D] strides (last is 1)
  int64_t bt_s0;
  int page, group, Dk, Dv, Hq, Hkv;
  bool page_pow2;  // the page size is a power of two: offsets in a page by mask
  float scale;
  // decode split-KV
  int splits;
  float* part_o;   // [B, Hq, splits, Dv]
  float* part_ml;  // [B, Hq, splits, 2]
  // The decode kernel merges its splits itself (the last block of each group; the tensor-core
  // kernel) instead of leaving them to attn_decode_combine.
  bool merge_in_kernel;
  // With merge_in_kernel: the splits a sequence actually uses are ceil(ctx / split_keys), at most
  // `splits` (0: always `splits`). The grid is sized for the longest context the launch may see
  // (a graph's bound), so short contexts would otherwise pay the split merge for a few keys each.
  int split_keys;
  // The tensor-core decode kernel copies a warp's first tile before waiting for the previous
  // kernel when it holds only earlier steps' keys (PORTLLM_ATTN_EARLY=0 turns that off, to measure).
  bool early_tiles;
  // The tensor-core decode kernel: a block whose sequence has at most this many keys lets the next
  // kernel launch right after its wait, a longer one only when it exits (attention_decode_mma.cu).
  int early_trigger_keys;
};

// Element offset of position pos of sequence b in a [NB, page, H, D] cache with strides s0, s1, s2,
// KV head kh. 32-bit index math (a 64-bit division is a long software routine on GPUs, and
// kernels call this per key); only the final products are 64-bit.
__device__ __forceinline__ int64_t kv_offset(const AttnParams& p, int b, int pos, int64_t s0, int64_t s1, int64_t s2,
                                             int kh) {
  const int blk = p.block_tables[int64_t(b) * p.bt_s0 + pos / p.page];
  return int64_t(blk) * s0 + int64_t(pos % p.page) * s1 + int64_t(kh) * s2;
}

inline AttnParams params_of(const AttentionArgs& a) {
  AttnParams p{};
  p.q = a.q.data;
  p.out = a.out.data;
  p.k_cache = a.k_cache.data;
  p.v_cache = a.v_cache.data;
  p.block_tables = a.block_tables.ptr<int32_t>();
  p.seq_lens = a.seq_lens.ptr<int32_t>();
  p.qsl = a.query_start_loc.ptr<int32_t>();
  if (a.work_order.defined()) p.work_order = a.work_order.ptr<int32_t>();  // checked by ops::attention
  p.q_s0 = a.q.strides[0];
  p.q_s1 = a.q.strides[1];
  p.o_s0 = a.out.strides[0];
  p.o_s1 = a.out.strides[1];
  p.kc_s0 = a.k_cache.strides[0];
  p.kc_s1 = a.k_cache.strides[1];
  p.kc_s2 = a.k_cache.strides[2];
  p.vc_s0 = a.v_cache.strides[0];
  p.vc_s1 = a.v_cache.strides[1];
  p.vc_s2 = a.v_cache.strides[2];
  p.bt_s0 = a.block_tables.strides[0];
  p.page = int(a.k_cache.size(1));
  p.page_pow2 = p.page > 0 && (p.page & (p.page - 1)) == 0;
  p.Hq = int(a.q.size(1));
  p.Hkv = int(a.k_cache.size(2));
  p.group = p.Hq / p.Hkv;
  p.Dk = int(a.q.size(2));
  p.Dv = int(a.v_cache.size(3));
  p.scale = a.scale;
  return p;
}

// q and both caches allow 16-byte vector copies: 16-byte aligned bases, strides in whole vectors
// of 8 16-bit values for q and of cache_vec cache values (8, or 16 for fp8) for the caches (what
// the tensor-core kernels' cp.async copies need).
inline bool attention_views_vec16(const AttnParams& p, int cache_vec) {
  return aligned16(p.q) && aligned16(p.k_cache) && aligned16(p.v_cache) && p.q_s0 % 8 == 0 && p.q_s1 % 8 == 0 &&
         p.kc_s0 % cache_vec == 0 && p.kc_s1 % cache_vec == 0 && p.kc_s2 % cache_vec == 0 &&
         p.vc_s0 % cache_vec == 0 && p.vc_s1 % cache_vec == 0 && p.vc_s2 % cache_vec == 0;
}

// What the tensor-core attention kernels (NVIDIA-only, attention_*_mma.cu) take: q of a 16-bit
// dtype (bf16 only with bf16 matrix units) and a cache of the same dtype or fp8 (e4m3, widened to
// q's dtype in shared memory), Dk = Dv in {64, 128, 256}, and the shared memory the kernel needs
// at that head dim and cache dtype (smem(D, fp8)), on NVIDIA sm_80+.
inline bool mma_attention_supports(const OpDesc& d, const DeviceCaps& c, size_t (*smem)(int64_t D, bool fp8)) {
  const DType tq = d.dtype[0], tc = d.dtype[2];
  if ((tq != DType::BF16 && tq != DType::F16) || (tc != tq && tc != DType::F8E4M3)) return false;
  if (tq == DType::BF16 && !c.bf16_matmul) return false;
  const int64_t Dk = d.dim[0], Dv = d.dim[3];
  if (Dk != Dv || (Dk != 64 && Dk != 128 && Dk != 256)) return false;
  return smem(Dk, tc == DType::F8E4M3) <= size_t(std::max(c.shared_mem_per_block_optin, c.shared_mem_per_block)) &&
         c.vendor == "nvidia" && c.arch >= 80;
}

// Calls fn(Tag<T>{}, Tag<TC>{}) for the tensor-core kernels' pairings (mma_attention_supports):
// T = q's bf16 / f16, TC = T or the fp8 cache's gpu_fp8; returns what fn returns.
template <class Fn>
auto dispatch_mma_attention(const AttentionArgs& a, Fn&& fn) {
  const bool fp8 = a.k_cache.dtype == DType::F8E4M3;
  if (a.q.dtype == DType::BF16) return fp8 ? fn(Tag<gpu_bf16>{}, Tag<gpu_fp8>{}) : fn(Tag<gpu_bf16>{}, Tag<gpu_bf16>{});
  return fp8 ? fn(Tag<gpu_half>{}, Tag<gpu_fp8>{}) : fn(Tag<gpu_half>{}, Tag<gpu_half>{});
}

template <class Fn>
void dispatch_attn(const AttentionArgs& a, Fn&& fn) {
  dispatch_float(a.q.dtype, [&](auto tq) {
    dispatch_cache(a.k_cache.dtype, [&](auto tc) { fn(tq, tc); });
  });
}

// The portable prefill launcher (attention.cu); the tensor-core kernel falls back to it.
void attn_prefill_portable(const AttentionArgs& a, Stream& s);
// The portable decode launcher (attention_decode.cu); the tensor-core decode kernel falls back to it.
void attn_decode_portable(const AttentionArgs& a, Stream& s);

// Split-KV decode, shared by the decode kernels (attention_decode.cu). The number of splits
// depends on the batch (`blocks` = blocks per split) and the max_seq_len bound only, never on a
// context length, so one captured graph serves every step; each sequence's context is divided
// among the splits on the device. With splits > 1 each split writes (max, sum, unnormalized
// output) to the partials, and either the kernel's last block per group (merge_in_kernel) or
// attn_decode_combine merges them into out.
constexpr int kMaxSplits = 256;
int decode_splits(const AttentionArgs& a, int blocks, int min_keys, const DeviceCaps& caps, int blocks_per_cu = 4);
std::shared_ptr<void> decode_partials(AttnParams& p, int B, Stream& s);  // sets part_o / part_ml
void attn_decode_combine(const AttnParams& p, int B, DType q_dtype, gpuStream_t st);

}  // namespace portllm::gpu
