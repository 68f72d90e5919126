// Paged KV write and the portable attention prefill (no tensor-core code: MUSA builds it, and it is
// the sibling of the NVIDIA tensor-core prefill in attention_prefill_mma.cu).
//
// Prefill (flash-attention style): one block per (16-query tile, query head, sequence). K/V tiles
// of 32 keys are gathered through the block table into shared memory (f32, K rows padded by one to
// avoid bank conflicts); each warp owns 4 queries, lane j scores key j, and the warp keeps an
// online softmax (running max, sum, and an output slice of D/32 values per lane) in registers.
// Causal: query at position p sees keys 0..p; tiles past the tile's last position are skipped.
//
// Head dims up to 256 (8 values per lane); K and V head dims may differ. Any pairing of f32 /
// bf16 / f16 for q/out and the cache, or an fp8 (e4m3) cache.
#include <algorithm>
#include <cmath>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/attention_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "backends/gpu/vec_io.cuh"
#include "ops/op_args.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;
constexpr int kMaxD = 256;
constexpr int kPerLane = kMaxD / kWarpSize;  // output values per lane
constexpr int kBQ = 16, kBK = 32, kPrefillWarps = 4, kQPerWarp = kBQ / kPrefillWarps;
static_assert(kBK == kWarpSize, "prefill scores one key per lane");

// ---- KV write ----
// Fallback (unaligned views, odd head dims): one block per token, scalar copies.
template <class TK, class TC>
__global__ void kv_write_kernel(const TK* k, int64_t ks0, int64_t ks1, const TK* v, int64_t vs0, int64_t vs1,
                                TC* kc, int64_t kc0, int64_t kc1, int64_t kc2, TC* vc, int64_t vc0, int64_t vc1,
                                int64_t vc2, const int32_t* slots, int page, int H, int Dk, int Dv) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int64_t t = blockIdx.x;
  const int32_t slot = slots[t];
  if (slot < 0) return;
  const int64_t blk = slot / page, off = slot % page;
  for (int i = threadIdx.x; i < H * Dk; i += blockDim.x) {
    const int h = i / Dk, d = i % Dk;
    kc[blk * kc0 + off * kc1 + h * kc2 + d] = cvt<TC>(ld(k, t * ks0 + h * ks1 + d));
  }
  for (int i = threadIdx.x; i < H * Dv; i += blockDim.x) {
    const int h = i / Dv, d = i % Dv;
    vc[blk * vc0 + off * vc1 + h * vc2 + d] = cvt<TC>(ld(v, t * vs0 + h * vs1 + d));
  }
}

// Vector path: one thread per (token, head, N-value slice) of K or of V, a flat grid-stride index
// (K slices of a token first, then V), so a warp writes whole 16-byte runs of a cache row.
// N = 16 bytes of the narrower of the two dtypes (f32 <-> bf16 pairings read or write 32 bytes).
template <class TK, class TC, int N>
__global__ void __launch_bounds__(256) kv_write_vec_kernel(const TK* k, int64_t ks0, int64_t ks1, const TK* v,
                                                           int64_t vs0, int64_t vs1, TC* kc, int64_t kc0, int64_t kc1,
                                                           int64_t kc2, TC* vc, int64_t vc0, int64_t vc1, int64_t vc2,
                                                           const int32_t* slots, int page, uint32_t dk_n, uint32_t dv_n,
                                                           uint32_t ik, uint32_t per_tok, uint32_t n) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t t = i / per_tok, rem = i - t * per_tok;
    const int32_t slot = slots[t];
    if (slot < 0) continue;  // padding token
    const int64_t blk = slot / page, off = slot % page;
    const bool is_k = rem < ik;
    const uint32_t e = is_k ? rem : rem - ik, dn = is_k ? dk_n : dv_n;
    const uint32_t h = e / dn, d = (e - h * dn) * N;
    const TK* src = is_k ? k + (int64_t(t) * ks0 + int64_t(h) * ks1 + d) : v + (int64_t(t) * vs0 + int64_t(h) * vs1 + d);
    TC* dst = is_k ? kc + (blk * kc0 + off * kc1 + int64_t(h) * kc2 + d) : vc + (blk * vc0 + off * vc1 + int64_t(h) * vc2 + d);
    float f[N];
    load_vec<TK, N>(src, f);
    store_vec<TC, N>(dst, f);
  }
}

void kv_write(const KvWriteArgs& a, Stream& s) {
  const int64_t T = a.k.size(0);
  if (T == 0) return;
  dispatch_float(a.k.dtype, [&](auto tk) {
    dispatch_cache(a.k_cache.dtype, [&](auto tc) {
      using TK = typename decltype(tk)::type;
      using TC = typename decltype(tc)::type;
      constexpr int N = std::max(kVec16<TK>, kVec16<TC>);
      const int64_t H = a.k.size(1), Dk = a.k.size(2), Dv = a.v.size(2);
      const int64_t ik = H * (Dk / N), per_tok = ik + H * (Dv / N), n = T * per_tok;
      const bool vec = vec_view(a.k, N) && vec_view(a.v, N) && vec_view(a.k_cache, N) && vec_view(a.v_cache, N) &&
                       n > 0 && n < (int64_t(1) << 31);
      if (vec) {
        constexpr int kThreads = 256;
        launch_programmatic(s, kv_write_vec_kernel<TK, TC, N>,
                            dim3(wave_grid(s, (n + kThreads - 1) / kThreads, kThreads)), dim3(kThreads), 0,
                            a.k.ptr<TK>(), a.k.strides[0], a.k.strides[1], a.v.ptr<TK>(), a.v.strides[0], a.v.strides[1],
                            a.k_cache.ptr<TC>(), a.k_cache.strides[0], a.k_cache.strides[1], a.k_cache.strides[2],
                            a.v_cache.ptr<TC>(), a.v_cache.strides[0], a.v_cache.strides[1], a.v_cache.strides[2],
                            a.slot_mapping.ptr<int32_t>(), int(a.k_cache.size(1)), uint32_t(Dk / N), uint32_t(Dv / N),
                            uint32_t(ik), uint32_t(per_tok), uint32_t(n));
      } else {
        launch_programmatic(s, kv_write_kernel<TK, TC>, dim3(unsigned(T)), dim3(256), 0, a.k.ptr<TK>(), a.k.strides[0],
                            a.k.strides[1], a.v.ptr<TK>(), a.v.strides[0], a.v.strides[1], a.k_cache.ptr<TC>(),
                            a.k_cache.strides[0], a.k_cache.strides[1], a.k_cache.strides[2], a.v_cache.ptr<TC>(),
                            a.v_cache.strides[0], a.v_cache.strides[1], a.v_cache.strides[2],
                            a.slot_mapping.ptr<int32_t>(), int(a.k_cache.size(1)), int(H), int(Dk), int(Dv));
      }
    });
  });
  check_launch("kv_write");
}

// ---- prefill ----
template <class TQ, class TC>
__global__ void __launch_bounds__(kPrefillWarps * kWarpSize) attn_prefill_kernel(AttnParams p) {
  const int b = blockIdx.z, h = blockIdx.y, qt0 = blockIdx.x * kBQ;
  const int q0 = p.qsl[b], q_len = p.qsl[b + 1] - q0, ctx = p.seq_lens[b];
  if (qt0 >= q_len) return;
  const int kh = h / p.group, Dk = p.Dk, Dv = p.Dv;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  extern __shared__ float smem[];
  float* sq = smem;                    // [kBQ][Dk]
  float* sk = sq + kBQ * Dk;           // [kBK][Dk + 1]
  float* sv = sk + kBK * (Dk + 1);     // [kBK][Dv]
  const TQ* q = static_cast<const TQ*>(p.q);
  const TC* kc = static_cast<const TC*>(p.k_cache);
  const TC* vc = static_cast<const TC*>(p.v_cache);
  const int nq = min(kBQ, q_len - qt0);
  for (int i = threadIdx.x; i < kBQ * Dk; i += blockDim.x) {
    const int qi = i / Dk, d = i % Dk;
    sq[i] = qi < nq ? ld(q, int64_t(q0 + qt0 + qi) * p.q_s0 + int64_t(h) * p.q_s1 + d) * p.scale : 0.f;
  }
  float m[kQPerWarp], l[kQPerWarp], acc[kQPerWarp][kPerLane];
#pragma unroll
  for (int i = 0; i < kQPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) acc[i][c] = 0.f;
  }
  const int first_pos = ctx - q_len;          // position of query 0 of this sequence
  const int num_keys = first_pos + qt0 + nq;  // the tile's last query sees keys < num_keys
  for (int kt = 0; kt < num_keys; kt += kBK) {
    __syncthreads();
    for (int i = threadIdx.x; i < kBK * Dk; i += blockDim.x) {
      const int j = i / Dk, d = i % Dk, pos = kt + j;
      float v = 0.f;
      if (pos < num_keys) v = ld(kc, kv_offset(p, b, pos, p.kc_s0, p.kc_s1, p.kc_s2, kh) + d);
      sk[j * (Dk + 1) + d] = v;
    }
    for (int i = threadIdx.x; i < kBK * Dv; i += blockDim.x) {
      const int j = i / Dv, d = i % Dv, pos = kt + j;
      float v = 0.f;
      if (pos < num_keys) v = ld(vc, kv_offset(p, b, pos, p.vc_s0, p.vc_s1, p.vc_s2, kh) + d);
      sv[j * Dv + d] = v;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kQPerWarp; ++i) {
      const int qi = warp * kQPerWarp + i;
      if (qi >= nq) break;
      const int qpos = first_pos + qt0 + qi;
      if (kt > qpos) continue;  // whole tile in this query's future
      const int kpos = kt + lane;
      float s = -INFINITY;
      if (kpos <= qpos) {
        const float* qr = sq + qi * Dk;
        const float* kr = sk + lane * (Dk + 1);
        float dot = 0.f;
        for (int d = 0; d < Dk; ++d) dot += qr[d] * kr[d];
        s = dot;
      }
      const float m_new = fmaxf(m[i], warp_max(s));
      const float alpha = __expf(m[i] - m_new);
      const float pr = kpos <= qpos ? __expf(s - m_new) : 0.f;
      l[i] = l[i] * alpha + warp_sum(pr);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) acc[i][c] *= alpha;
      const int jmax = min(kBK, qpos - kt + 1);
      for (int j = 0; j < jmax; ++j) {
        const float pj = gpu_shfl(pr, j);
        const float* vr = sv + j * Dv;
#pragma unroll
        for (int c = 0; c < kPerLane; ++c) {
          const int d = lane + c * kWarpSize;
          if (d < Dv) acc[i][c] += pj * vr[d];
        }
      }
      m[i] = m_new;
    }
  }
  TQ* out = static_cast<TQ*>(p.out);
#pragma unroll
  for (int i = 0; i < kQPerWarp; ++i) {
    const int qi = warp * kQPerWarp + i;
    if (qi >= nq) break;
    const float inv = 1.f / l[i];
    TQ* orow = out + int64_t(q0 + qt0 + qi) * p.o_s0 + int64_t(h) * p.o_s1;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const int d = lane + c * kWarpSize;
      if (d < Dv) orow[d] = cvt<TQ>(acc[i][c] * inv);
    }
  }
}

size_t prefill_smem(int Dk, int Dv) { return sizeof(float) * (size_t(kBQ) * Dk + size_t(kBK) * (Dk + 1) + size_t(kBK) * Dv); }

}  // namespace

void attn_prefill_portable(const AttentionArgs& a, Stream& s) {
  AttnParams p = params_of(a);
  const int B = int(a.seq_lens.size(0)), Hq = int(a.q.size(1));
  if (B == 0 || a.q.size(0) == 0) return;
  const int tiles = (a.max_q_len + kBQ - 1) / kBQ;
  const size_t smem = prefill_smem(p.Dk, p.Dv);
  dispatch_attn(a, [&](auto tq, auto tc) {
    using TQ = typename decltype(tq)::type;
    using TC = typename decltype(tc)::type;
    if (smem > 48 * 1024)
      (void)gpuFuncSetAttribute(attn_prefill_kernel<TQ, TC>, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    attn_prefill_kernel<TQ, TC><<<dim3(unsigned(tiles), unsigned(Hq), unsigned(B)), kPrefillWarps * kWarpSize, smem,
                                  native_stream(s)>>>(p);
  });
  check_launch("attn_prefill");
}

namespace {
bool attn_supports(const OpDesc& d, const DeviceCaps& c) {
  if (!is_gpu_float(d.dtype[0]) || !is_gpu_cache(d.dtype[2])) return false;
  const int64_t Dk = d.dim[0], Dv = d.dim[3];
  if (Dk > kMaxD || Dv > kMaxD || Dk <= 0 || Dv <= 0) return false;
  if (prefill_smem(int(Dk), int(Dv)) > std::max(c.shared_mem_per_block_optin, c.shared_mem_per_block)) return false;
  return true;
}
}  // namespace

void register_attention_kernels() {
  register_kernel<KvWriteArgs>(Op::KV_WRITE, kKind, "gpu.kv_write", 10,
                               [](const OpDesc& d, const DeviceCaps&) { return is_gpu_float(d.dtype[0]) && is_gpu_cache(d.dtype[2]); },
                               kv_write);
  register_kernel<AttentionArgs>(Op::ATTN_PREFILL, kKind, "gpu.attn_prefill_tiled", 10,
                                 [](const OpDesc& d, const DeviceCaps& c) { return attn_supports(d, c); },
                                 attn_prefill_portable);
}

}  // namespace portllm::gpu
