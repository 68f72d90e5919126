// MOE_DOWN_COMBINE: the second half of a small batch's experts in one launch instead of three
// (SILU_MUL, the down MOE_GEMM, MOE_COMBINE). At decode each of those is a few microseconds of
// launch, fill and drain for very little work; only the down projection's weight stream matters.
//
// A block owns one token t and a slice of kSlice output columns, and sums over the token's k
// experts itself, so the weighted combine needs no atomics and is deterministic:
//  * it stages h_j = w[t, j] * act(silu(gate_j) * up_j) for every slot j as f32 in shared memory
//    (act(): rounded to the activation dtype, as SILU_MUL's output), a K-chunk at a time when the
//    k rows do not fit, in the layout moe_gemv.cu uses (x_slot: conflict-free float4 reads);
//  * the block's warps form kGroups row groups of kRowsW output columns; the kWg warps of a group
//    split the (slot j, K step) pairs of the chunk between them, streaming W[e_j] rows with
//    16-byte loads (two steps in flight), so the work is even for any k and K;
//  * each warp's partial sums are reduced across lanes, then across the group's warps in a fixed
//    order, plus the shared-expert row, and stored once.
// Blocks of one column slice for consecutive tokens are neighbours in blockIdx.x, so an expert
// that several tokens of the batch chose is streamed from HBM about once.
//
// Every block re-reads its token's k gate|up rows (k * 2I values, from L2) to stage them: at
// Qwen3-30B-A3B batch 1 that is 24 KB per block against 98 KB of weights, which is why a block
// owns 8 columns (2 groups) rather than 4 (twice the staging) or 32 (too few blocks to fill the
// device: 64 for a 2048-wide output). Activated input (MoeDownCombineArgs::activated, from
// MOE_GEMM's SwiGLU epilogue) halves that read and drops the SwiGLU evaluation; with float
// weights and 16-byte h rows nothing is staged at all: each lane loads the h values of a (slot,
// K step) pair together with that step's weights, so the wait for the gate|up GEMM is followed by
// loads, not by a staging pass and a barrier. Measured on the H200 (`ops perf -o MOE_DOWN_COMBINE`,
// Qwen3-30B-A3B down at 1 token, thirty-second session): 9.3 us from gate|up, 7.5 us staging h,
// 6.2 us loading h directly (4.0 TB/s); in the decode step (`bench latency`, batch 1) 2.45 ->
// 2.43 ms for the direct loads.
//
// When it pays (supports(); ops::moe_experts runs the op sequence otherwise), measured on the H200
// (`ops perf -o MOE_DOWN_COMBINE`, graph replay):
//  * few tokens: each block streams its token's k expert rows, so the time grows with T (Qwen3-
//    30B-A3B: 9.4 us at 1 token, where the grouped down GEMV alone took 9.5; 76.9 us at 8 tokens),
//    while the grouped GEMV streams each distinct expert once (53 for the 64 rows of 8 tokens:
//    about 62 us at the 2.7 TB/s it reaches at 1 token, an estimate, not measured) and the launches
//    saved (MOE_PERMUTE's four, SILU_MUL, MOE_COMBINE) are ~15 us: about even at 8 tokens, a gain at
//    up to 4 (~38 us against ~34 + 15 by the same estimate). So T <= kMaxTokens = 4.
//  * float weights: with fp8 blocks (V2-Lite's down, 1 token) it took 30.1 us = 0.58 TB/s, the
//    gate|up staging (as many bytes as the fp8 weights of a 4-column block) and two K chunks in
//    series dominating, where the fp8 GEMV streams at ~1.7 TB/s. fp8 stays correct here (the
//    conformance cases) and PORTLLM_MOE_FUSED=fp8 takes it, for tuning; by default fp8 experts run
//    the op sequence.
// PORTLLM_MOE_FUSED=0 turns the kernel off (A/B measurements), as PORTLLM_W8A8=0 does its kernel.
//
// Portable CUDA C++: no PTX, any kWarpSize (with 128-wide warps a group is one warp).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/grouped_gemm.h"
#include "backends/gpu/moe_gemv_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "backends/gpu/vec_io.cuh"
#include "ops/op_args_moe.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;
constexpr const char* kName = "gpu.moe_down_combine";
constexpr int kPriority = 10;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kGroups = 2;               // row groups per block
constexpr int kWg = kWarps / kGroups;    // warps per row group
static_assert(kWarps % kGroups == 0, "row groups must split the warps evenly");
// Output columns per warp (fp8: 2, bf16 4) and blocks per SM the registers are sized for, as in
// moe_gemv.cu (fp8 decoding is ALU-bound).
template <class TW> constexpr int kRowsOf = std::is_same_v<TW, uint8_t> ? 2 : 4;
template <class TW> constexpr int kMinBlocksOf = std::is_same_v<TW, uint8_t> ? 3 : 2;
template <class TW> constexpr int kSliceOf = kGroups * kRowsOf<TW>;  // output columns per block
constexpr int kXFloats = 8192;  // staged activations: 32 KB (fits MUSA's 48 KB too)
constexpr int kMaxK = 64;       // slots per token the shared arrays hold (8192 / 64 = 128-wide chunks)
// The batch sizes the fused path serves (see the top of the file).
constexpr int64_t kMaxTokens = 4;

struct DownParams {
  void* out = nullptr;
  int64_t out_ld = 0;
  const void* gu = nullptr;  // [T*k, 2I]: gate at column c, up at column I + c
  int64_t gu_ld = 0;
  const void* shared = nullptr;
  int64_t sh_ld = 0;
  const void* w = nullptr;  // [E][N, K]
  int64_t w_ld = 0, w_es = 0;
  const float* scale = nullptr;  // fp8: scale[e * s_es + (n / block_n) * s_s0 + (k / block_k) * s_s1]
  int64_t s_es = 0, s_s0 = 0, s_s1 = 0;
  int block_n = 1, block_k = 1;
  const int32_t* ids = nullptr;
  int64_t id_s0 = 0, id_s1 = 0;
  const float* wts = nullptr;
  int64_t wt_s0 = 0, wt_s1 = 0;
  int64_t N = 0, K = 0;  // H and I
  int k = 1;
  int kc_stride = 16;    // K per staged chunk (a multiple of 16), chunks balanced over K
  bool vec_x = false;    // gate|up rows allow 16-byte loads
  bool l2_evict_first = true;  // the weight loads' L2 policy (load_weight16)
};

// The staged value of element i of a slot: its routing weight times h_i = silu(g_i) * u_i rounded
// to TX, exactly SILU_MUL's output (kAct: g is h itself).
template <class TX, bool kAct> __device__ __forceinline__ float staged(const TX* g, const TX* u, int i, float wt) {
  if constexpr (kAct) return wt * ld(g, i);
  else return wt * round_to<TX>(silu_times(ld(g, i), ld(u, i)));
}

// kAct: gate_up holds h itself ([T*k, I], MoeDownCombineArgs::activated).
template <class TX, class TW, bool kVec, bool kAct>
__global__ void __launch_bounds__(kThreads, kMinBlocksOf<TW>) down_combine_kernel(DownParams p) {
  constexpr bool kFp8 = std::is_same_v<TW, uint8_t>;
  constexpr int kRowsW = kRowsOf<TW>, kSlice = kSliceOf<TW>;
  constexpr int V = kVec ? WVec<TW>::V : 1;  // weights per load
  constexpr int XV = kVec ? V : 4;          // staged layout (x_slot)
  constexpr int G = XV / 4;                 // float4 groups per load (vector path)
  constexpr int kStep = kWarpSize * V;      // K covered by one warp-wide load of a row: one step
  using Raw = std::conditional_t<kVec, uint4, TW>;
  const unsigned long long l2_policy = gpu_stream_policy();

  __shared__ __align__(16) float hs[kXFloats];  // [k][kc_stride]: slot j's chunk at j * kc_stride
  __shared__ int ex_s[kMaxK];
  __shared__ float wt_s[kMaxK];
  __shared__ float red[kWarps][kRowsW];

  const int tid = int(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int grp = warp / kWg, q = warp % kWg;
  const int64_t t = blockIdx.x;
  const int k = p.k;
  const int64_t N = p.N, K = p.K;
  // The routing (ids, weights) comes from MOE_ROUTE, which ran before this kernel's predecessor
  // (the gate|up MOE_GEMM, whose output h is): it is settled before the wait
  // (programmatic_launch.cuh), so the expert ids and the first weights of the stream are read
  // while the gate|up GEMM drains.
  if (tid < k) {
    ex_s[tid] = gpu_load_settled(p.ids + t * p.id_s0 + tid * p.id_s1);
    wt_s[tid] = gpu_load_settled(p.wts + t * p.wt_s0 + tid * p.wt_s1);
  }
  __syncthreads();

  const int64_t n0 = int64_t(blockIdx.y) * kSlice + int64_t(grp) * kRowsW;
  const bool active = n0 < N;  // warp-uniform: a warp past N only helps stage
  bool rv[kRowsW];             // W row n0 + r exists
  int soff[kRowsW];            // fp8: offset of each row's scale row within an expert's scales
#pragma unroll
  for (int r = 0; r < kRowsW; ++r) {
    rv[r] = n0 + r < N;
    soff[r] = kFp8 && rv[r] ? int(((n0 + r) / p.block_n) * p.s_s0) : 0;
  }
  const TW* w = static_cast<const TW*>(p.w) + (active ? n0 : 0) * p.w_ld;
  const TX* gu = static_cast<const TX*>(p.gu) + t * int64_t(k) * p.gu_ld;

  float acc[kRowsW];
#pragma unroll
  for (int r = 0; r < kRowsW; ++r) acc[r] = 0.f;
  Raw raw0[kRowsW], raw1[kRowsW];  // two steps in flight
  float sc0[kRowsW], sc1[kRowsW];  // fp8: their block scales (dropped by the compiler otherwise)
  const int kc_stride = p.kc_stride;
  // Direct h: activated rows are read where they are used, the V values of a step as 16-byte
  // vectors loaded beside its weights, so nothing is staged and no barrier follows the wait.
  // Float weights only: with fp8's 16-wide vectors the extra registers spill at 80.
  constexpr bool kDirect = kAct && kVec && !kFp8;
  constexpr int HV = kDirect ? (V * int(sizeof(TX)) + 15) / 16 : 1;
  uint4 hr0[HV], hr1[HV];
  const bool direct = kDirect && p.vec_x;  // h rows allow 16-byte loads
  auto load_h = [&](uint4 (&hr)[HV], int s, int64_t c0, int kc, int spe) {
    const int j = s / spe;
    const int kk = (s - j * spe) * kStep + lane * V;
    const bool ok = kk < kc;
    const TX* src = gu + int64_t(j) * p.gu_ld + c0 + kk;
#pragma unroll
    for (int b = 0; b < HV; ++b)
      hr[b] = ok ? *reinterpret_cast<const uint4*>(src + b * (16 / int(sizeof(TX)))) : make_uint4(0, 0, 0, 0);
  };

  // Step s = (slot j, K step i) of the chunk at c0 (kc wide, spe steps per slot): this lane's V
  // weights of each row, zeros outside.
  auto load_at = [&](Raw (&rw)[kRowsW], float (&sw)[kRowsW], int s, int64_t c0, int kc, int spe) {
    const int j = s / spe;
    const int kk = (s - j * spe) * kStep + lane * V;
    const bool ok = kk < kc;
    const int64_t e = ex_s[j], kg = c0 + kk;
    const TW* src = w + e * p.w_es + kg;
    const float* s_e = kFp8 ? p.scale + e * p.s_es + (ok ? int64_t(int(kg) / p.block_k) * p.s_s1 : 0) : nullptr;
#pragma unroll
    for (int r = 0; r < kRowsW; ++r) {
      const bool in = ok && rv[r];
      if constexpr (kVec) rw[r] = in ? load_weight16(src + r * p.w_ld, p.l2_evict_first, l2_policy) : make_uint4(0, 0, 0, 0);
      else rw[r] = in ? src[r * p.w_ld] : Raw{};
      if constexpr (kFp8) sw[r] = in ? s_e[soff[r]] : 0.f;
    }
  };
  // The chunk at c0: its width and its steps per slot. The first two steps of chunk 0 are loaded
  // here, before the wait, exactly as the loop below would load them: one fewer HBM round trip
  // after the gate|up GEMM ends than with one (H200, batch 1, `bench latency` in BENCHMARKS.md,
  // eighteenth session: Qwen3-30B-A3B 2.60 -> 2.58 ms, DeepSeek-V2-Lite 2.72 -> 2.71).
  auto chunk_width = [&](int64_t c0) { return int(std::min<int64_t>(kc_stride, K - c0)); };
  auto steps_per_slot = [&](int kc) { return (kc + kStep - 1) / kStep; };
  {
    const int kc = chunk_width(0), spe = steps_per_slot(kc);
    if (active && q < k * spe) load_at(raw0, sc0, q, 0, kc, spe);
    if (active && q + kWg < k * spe) load_at(raw1, sc1, q + kWg, 0, kc, spe);
  }
  gpu_wait_for_predecessor();  // launched programmatically: h is the predecessor's output
  gpu_allow_successor();
  if constexpr (kDirect) {
    if (direct && active) {
      const int kc = chunk_width(0), spe = steps_per_slot(kc);
      if (q < k * spe) load_h(hr0, q, 0, kc, spe);
      if (q + kWg < k * spe) load_h(hr1, q + kWg, 0, kc, spe);
    }
  }

  for (int64_t c0 = 0; c0 < K; c0 += kc_stride) {  // block-uniform
    const int kc = chunk_width(c0), spe = steps_per_slot(kc);
    const int nsteps = k * spe;
    auto load = [&](Raw (&rw)[kRowsW], float (&sw)[kRowsW], uint4 (&hr)[HV], int s) {
      load_at(rw, sw, s, c0, kc, spe);
      if constexpr (kDirect)
        if (direct) load_h(hr, s, c0, kc, spe);
    };
    auto compute = [&](const Raw (&rw)[kRowsW], const float (&sw)[kRowsW], const uint4 (&hr)[HV], int s) {
      const int j = s / spe;
      const int kk = (s - j * spe) * kStep + lane * V;
      if (kk >= kc) return;
      const float* hj = hs + j * kc_stride;
      if constexpr (kVec) {
        const float* hg = hj + 4 * (kk / V);
        const TX* hd = reinterpret_cast<const TX*>(hr);
#pragma unroll
        for (int g = 0; g < G; ++g) {
          float4 xv;
          if (kDirect && direct) {
            const float wt = wt_s[j];
            xv = make_float4(wt * ld(hd, 4 * g), wt * ld(hd, 4 * g + 1), wt * ld(hd, 4 * g + 2), wt * ld(hd, 4 * g + 3));
          } else {
            xv = *reinterpret_cast<const float4*>(hg + g * (kc_stride / G));
          }
#pragma unroll
          for (int r = 0; r < kRowsW; ++r) {
            float wf[4];
            WVec<TW>::group(rw[r], g, wf);
            if constexpr (kFp8)
#pragma unroll
              for (int i = 0; i < 4; ++i) wf[i] *= sw[r];
            float a = acc[r];
            a = fmaf(wf[0], xv.x, a);
            a = fmaf(wf[1], xv.y, a);
            a = fmaf(wf[2], xv.z, a);
            acc[r] = fmaf(wf[3], xv.w, a);
          }
        }
      } else {
        const float xv = hj[kk];
#pragma unroll
        for (int r = 0; r < kRowsW; ++r) {
          float wf = wval(rw[r]);
          if constexpr (kFp8) wf *= sw[r];
          acc[r] = fmaf(wf, xv, acc[r]);
        }
      }
    };

    if (c0 > 0 && active && q < nsteps) load(raw0, sc0, hr0, q);  // the first weights are in flight while h is staged
    if (!direct) {  // direct: h comes with each step's weights (load_h), nothing to stage
      __syncthreads();  // every warp is done with the previous chunk
      if (p.vec_x) {
        // 16-byte loads of gate and up (I, the row stride and c0 keep them aligned), a few per
        // thread issued before any is used, then float4 stores (four consecutive kk from a
        // multiple of 4 are consecutive in x_slot).
        constexpr int XN = 16 / int(sizeof(TX));
        constexpr int kBatch = kFp8 ? 2 : 4;  // fp8 kernels live in 80 registers
        const int nv = kc / XN, total = k * nv;
        for (int i0 = tid; i0 < total; i0 += kBatch * kThreads) {
          uint4 gv[kBatch], uv[kBatch];
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            const int i = i0 + b * kThreads;
            if (i < total) {
              const TX* row = gu + int64_t(i / nv) * p.gu_ld + c0 + (i % nv) * XN;
              gv[b] = *reinterpret_cast<const uint4*>(row);
              if constexpr (!kAct) uv[b] = *reinterpret_cast<const uint4*>(row + K);
            }
          }
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            const int i = i0 + b * kThreads;
            if (i >= total) break;
            const int j = i / nv, kk = (i % nv) * XN;
            const TX* gs = reinterpret_cast<const TX*>(&gv[b]);
            const TX* us = reinterpret_cast<const TX*>(&uv[b]);
            float* hj = hs + j * kc_stride;
#pragma unroll
            for (int qd = 0; qd < XN / 4; ++qd) {
              const int e = 4 * qd;
              const float wt = wt_s[j];
              const float4 h = make_float4(staged<TX, kAct>(gs, us, e, wt), staged<TX, kAct>(gs, us, e + 1, wt),
                                           staged<TX, kAct>(gs, us, e + 2, wt), staged<TX, kAct>(gs, us, e + 3, wt));
              *reinterpret_cast<float4*>(hj + x_slot<XV>(kk + 4 * qd, kc_stride)) = h;
            }
          }
        }
      } else {
        for (int i = tid; i < k * kc; i += kThreads) {
          const int j = i / kc, kk = i % kc;
          const TX* row = gu + int64_t(j) * p.gu_ld + c0;
          hs[j * kc_stride + x_slot<XV>(kk, kc_stride)] = staged<TX, kAct>(row, row + K, kk, wt_s[j]);
        }
      }
      __syncthreads();
    }
    if (active) {
      for (int s = q; s < nsteps; s += 2 * kWg) {  // warp-uniform trip count
        const bool preloaded = c0 == 0 && s == q;  // raw1 went before the wait
        if (s + kWg < nsteps && !preloaded) load(raw1, sc1, hr1, s + kWg);
        compute(raw0, sc0, hr0, s);
        if (s + 2 * kWg < nsteps) load(raw0, sc0, hr0, s + 2 * kWg);
        if (s + kWg < nsteps) compute(raw1, sc1, hr1, s + kWg);
      }
    }
  }

  // Lane sums -> one value per (warp, row) -> the group's warps in a fixed order (deterministic).
#pragma unroll
  for (int r = 0; r < kRowsW; ++r) {
    const float v = warp_sum(acc[r]);  // every lane of every warp takes part
    if (lane == 0) red[warp][r] = v;
  }
  __syncthreads();
  if (tid < kSlice) {
    const int g = tid / kRowsW, r = tid % kRowsW;
    const int64_t n = int64_t(blockIdx.y) * kSlice + tid;
    if (n < N) {
      float sum = 0.f;
      for (int i = 0; i < kWg; ++i) sum += red[g * kWg + i][r];
      constexpr float kOutScale = kFp8 ? 1.f / 256.f : 1.f;  // fp8 weights were decoded times 256
      sum *= kOutScale;
      if (p.shared) sum += ld(static_cast<const TX*>(p.shared), t * p.sh_ld + n);  // read before the
      static_cast<TX*>(p.out)[t * p.out_ld + n] = cvt<TX>(sum);                  // aliasing write
    }
  }
}

template <class TX, class TW, bool kAct>
void launch_act(const DownParams& p, int64_t T, Stream& s) {
  constexpr bool kFp8 = std::is_same_v<TW, uint8_t>;
  constexpr int64_t ws = int64_t(sizeof(TW)), V = WVec<TW>::V;
  const bool vec = aligned16(p.w) && (p.w_ld * ws) % 16 == 0 && (p.w_es * ws) % 16 == 0 && p.K % V == 0 &&
                   (!kFp8 || p.block_k % 16 == 0);
  const int64_t slices = (p.N + kSliceOf<TW> - 1) / kSliceOf<TW>;
  if (T > 0x7fffffff || slices > 65535) fail("moe_down_combine: problem too large for the grid");
  const dim3 grid{unsigned(T), unsigned(slices)};
  if (vec) launch_programmatic(s, down_combine_kernel<TX, TW, true, kAct>, grid, dim3(kThreads), 0, p);
  else launch_programmatic(s, down_combine_kernel<TX, TW, false, kAct>, grid, dim3(kThreads), 0, p);
  check_launch("moe_down_combine");
}

template <class TX, class TW>
void launch_typed(const DownParams& p, int64_t T, bool activated, Stream& s) {
  if (activated) launch_act<TX, TW, true>(p, T, s);
  else launch_act<TX, TW, false>(p, T, s);
}

void down_combine(const MoeDownCombineArgs& a, Stream& s) {
  const int64_t T = a.topk_ids.size(0), k = a.topk_ids.size(1), N = a.w.size(1), K = a.w.size(2);
  if (a.topk_ids.dtype != DType::I32 || a.topk_weights.dtype != DType::F32 || a.topk_weights.size(0) != T ||
      a.topk_weights.size(1) != k)
    fail("moe_down_combine: topk_ids [T, k] i32 and topk_weights [T, k] f32 expected");
  if (a.gate_up.size(0) != T * k || a.gate_up.size(1) != (a.activated ? K : 2 * K) || a.out.size(0) != T ||
      a.out.size(1) != N ||
      a.out.dtype != a.gate_up.dtype || (a.shared.defined() && (a.shared.dtype != a.out.dtype ||
                                                                a.shared.size(0) != T || a.shared.size(1) != N)))
    fail("moe_down_combine: shapes or dtypes of gate_up [T*k, 2I] ([T*k, I] activated), W [E, H, I], out / shared [T, H] disagree");
  if (k < 1 || k > kMaxK) fail("moe_down_combine: top_k must be in [1, 64]");
  if (T == 0 || N == 0) return;
  DownParams p;
  p.l2_evict_first = l2_evict_first();
  p.out = a.out.data;
  p.out_ld = a.out.strides[0];
  p.gu = a.gate_up.data;
  p.gu_ld = a.gate_up.strides[0];
  if (a.shared.defined()) {
    p.shared = a.shared.data;
    p.sh_ld = a.shared.strides[0];
  }
  set_expert_weights(p, a.w, a.w_scale, a.block_n, a.block_k, "moe_down_combine");
  p.ids = a.topk_ids.ptr<int32_t>();
  p.id_s0 = a.topk_ids.strides[0];
  p.id_s1 = a.topk_ids.strides[1];
  p.wts = a.topk_weights.ptr<float>();
  p.wt_s0 = a.topk_weights.strides[0];
  p.wt_s1 = a.topk_weights.strides[1];
  p.N = N;
  p.K = K;
  p.k = int(k);
  // Chunks of K as even as multiples of 16 allow (V2-Lite's k = 6, I = 1408: 2 x 704, not
  // 1360 + 48).
  const int64_t kc_max = (kXFloats / k) & ~int64_t(15);
  const int64_t chunks = std::max<int64_t>(1, (K + kc_max - 1) / kc_max);
  p.kc_stride = int(((K + chunks - 1) / chunks + 15) & ~int64_t(15));
  const int64_t xb = int64_t(dtype_size(a.gate_up.dtype));
  p.vec_x = aligned16(a.gate_up.data) && (p.gu_ld * xb) % 16 == 0 && (K * xb) % 16 == 0;  // the up half too
  if (K >= (int64_t(1) << 31) || N >= (int64_t(1) << 31)) fail("moe_down_combine: H and I must be below 2^31");
  // Weights: fp8, the activation dtype, or (f32 activations) any float dtype.
  dispatch_float(a.gate_up.dtype, [&](auto tx) {
    using TX = typename decltype(tx)::type;
    const bool act = a.activated;
    if (a.w.dtype == DType::F8E4M3) return launch_typed<TX, uint8_t>(p, T, act, s);
    if (a.w.dtype == a.gate_up.dtype) return launch_typed<TX, TX>(p, T, act, s);
    if constexpr (std::is_same_v<TX, float>) {
      if (a.w.dtype == DType::BF16) return launch_typed<float, gpu_bf16>(p, T, act, s);
      if (a.w.dtype == DType::F16) return launch_typed<float, gpu_half>(p, T, act, s);
    }
    fail("moe_down_combine: weights must be fp8, f32 or the activation dtype");
  });
}

// PORTLLM_MOE_FUSED: "0" the op layer runs the op sequence at every batch size; "fp8" this kernel
// also takes fp8 expert weights (slower than the op sequence today, see the top of the file);
// unset or anything else: float weights only.
enum class Mode { Off, Float, WithFp8 };
Mode mode() {
  static const Mode m = [] {
    const char* v = std::getenv("PORTLLM_MOE_FUSED");
    if (v && std::strcmp(v, "0") == 0) return Mode::Off;
    if (v && std::strcmp(v, "fp8") == 0) return Mode::WithFp8;
    return Mode::Float;
  }();
  return m;
}

bool supports(const OpDesc& d, const DeviceCaps&) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  const int64_t T = d.dim[0], N = d.dim[1], K = d.dim[2], k = (d.flags >> 8) & 0xff;
  if (mode() == Mode::Off || !is_gpu_float(x) || o != x) return false;
  if (w == DType::F8E4M3 && mode() != Mode::WithFp8) return false;
  if (!(w == DType::F8E4M3 || w == x || (x == DType::F32 && is_gpu_float(w)))) return false;
  return T <= kMaxTokens && k >= 1 && k <= kMaxK && N < (int64_t(1) << 31) && K < (int64_t(1) << 31) &&
         (N + kSliceOf<uint8_t> - 1) / kSliceOf<uint8_t> <= 65535;  // the narrowest slice
}
}  // namespace

void register_moe_down_combine_kernels() {
  register_kernel<MoeDownCombineArgs>(Op::MOE_DOWN_COMBINE, kKind, kName, kPriority, supports, down_combine);
}

}  // namespace portllm::gpu
