// Gated DeltaNet (Qwen3-Next, Qwen3.5/3.6 linear attention): the causal depthwise conv1d with
// carried per-sequence state (GDN_CONV, GDN_CONV_DECODE) and the gated delta rule (GDN_RULE,
// GDN_RULE_DECODE). Semantics: ops/op_args_hybrid.h; oracle: ops/ref/hybrid_ref.cpp.
//
// Conv: one thread per (channel, chunk of 64 tokens, sequence) slides a K-wide window held in
// registers; the window's start comes from x (or the carried state / zeros before the sequence
// start). The carried state is only read by this kernel; a second kernel then rewrites each
// sequence's slot (the last K-1 inputs, older state included when the sequence is shorter than
// K-1), so no block can read a slot another block has already overwritten.
//
// Delta rule: the token-by-token recurrence (the reference's form). One block per (value-column
// chunk of 16, value head, sequence); the block's [Dk, 16] slice of the f32 state lives in
// registers, 8 row groups x 16 columns of threads, each thread holding Dk/8 rows of one column.
// Per token: q and k in shared memory (l2-normalized by each warp redundantly), S *= exp(g),
// S^T k and S^T q as register dot products reduced across the 8 row groups by xor shuffles
// (the row group is the low 3 bits of the lane, so this works for any warp size >= 8); the next
// token's q/k/v/a/b loads are issued before the current token's math so their latency overlaps it.
// Prefill runs the same recurrence over the sequence's tokens: correct, but sequential in
// time. The chunked (WY / UT-transform) form that turns the prefill into matmuls is the
// optimization still to do; decode (q_len 1) is exactly this kernel.
//
// Graph-safe: the host plans every grid from the batch size and the caller's max_q_len (an upper
// bound: a decode graph captures with 1) and reads no host mirror of per-step data; each block
// reads its sequence's query range, state slot and initial-state flag on the device. A sequence
// whose slot is negative (a decode graph's padding row) starts from zeros and writes no state.
//
// Math in f32 whatever the storage dtypes; q/k/v/out are one activation dtype (template), the
// conv weight, conv state, gating inputs (a, b, A_log, dt_bias) and the delta-rule state are
// read and written through a runtime dtype switch (f32/bf16/f16), which keeps the number of
// template instantiations small.
#include <algorithm>
#include <cmath>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "ops/op_args_hybrid.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;

// ---- runtime-dtype element access (f32 = 0, bf16 = 1, f16 = 2) ----
int rt_code(DType t) {
  switch (t) {
    case DType::F32: return 0;
    case DType::BF16: return 1;
    case DType::F16: return 2;
    default: fail("unsupported dtype (expected f32, bf16 or f16)");
  }
}
__device__ __forceinline__ float ld_rt(const void* p, int code, int64_t i) {
  if (code == 0) return static_cast<const float*>(p)[i];
  if (code == 1) return gpu_bf16_to_f32(static_cast<const gpu_bf16*>(p)[i]);
  return gpu_half_to_f32(static_cast<const gpu_half*>(p)[i]);
}
__device__ __forceinline__ void st_rt(void* p, int code, int64_t i, float v) {
  if (code == 0)
    static_cast<float*>(p)[i] = v;
  else if (code == 1)
    static_cast<gpu_bf16*>(p)[i] = gpu_f32_to_bf16(v);
  else
    static_cast<gpu_half*>(p)[i] = gpu_f32_to_half(v);
}

// ---- causal conv1d ----
constexpr int kConvMaxK = 16;
constexpr int kConvChunk = 64;
constexpr int kConvThreads = 128;

struct ConvParams {
  const void* x;
  void* out;
  const void* w;
  void* state;
  const int32_t* qsl;
  const int32_t* slots;
  const int32_t* init;
  int64_t x_s0, o_s0, w_s0, w_s1, st_s0, st_s1, st_s2;
  int C, K, w_code, st_code;
  bool silu;
};

template <class TA>
__global__ void __launch_bounds__(kConvThreads) conv_kernel(ConvParams p) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int c = blockIdx.x * kConvThreads + threadIdx.x;
  const int b = blockIdx.z;
  const int q0 = p.qsl[b], n = p.qsl[b + 1] - q0;
  const int t0 = blockIdx.y * kConvChunk;
  if (c >= p.C || t0 >= n) return;
  const int K = p.K;
  const TA* x = static_cast<const TA*>(p.x);
  const int64_t slot = p.slots[b];
  const bool has_init = p.init[b] != 0 && slot >= 0;  // padding rows (slot < 0) have no state
  float w[kConvMaxK], win[kConvMaxK];  // win[j], j < K-1: the K-1 inputs before the current token
#pragma unroll
  for (int j = 0; j < kConvMaxK; ++j) {
    w[j] = j < K ? ld_rt(p.w, p.w_code, int64_t(c) * p.w_s0 + int64_t(j) * p.w_s1) : 0.f;
    win[j] = 0.f;
  }
  // Inputs at sequence positions t0-K+1 .. t0-1: from x, or from the carried state before 0
  // (state row K-1+pos holds position pos < 0, oldest first), or zeros without initial state.
#pragma unroll
  for (int j = 0; j < kConvMaxK - 1; ++j) {
    if (j >= K - 1) break;
    const int pos = t0 - (K - 1) + j;
    float v = 0.f;
    if (pos >= 0)
      v = ld(x, int64_t(q0 + pos) * p.x_s0 + c);
    else if (has_init)
      v = ld_rt(p.state, p.st_code, slot * p.st_s0 + int64_t(K - 1 + pos) * p.st_s1 + int64_t(c) * p.st_s2);
    win[j] = v;
  }
  TA* out = static_cast<TA*>(p.out);
  const int t1 = min(n, t0 + kConvChunk);
  for (int t = t0; t < t1; ++t) {
    const float xv = ld(x, int64_t(q0 + t) * p.x_s0 + c);
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < kConvMaxK; ++j) {
      if (j < K - 1)
        s += w[j] * win[j];
      else if (j == K - 1)
        s += w[j] * xv;
    }
#pragma unroll
    for (int j = 0; j < kConvMaxK - 1; ++j)
      if (j < K - 1) win[j] = (j + 1 < K - 1) ? win[j + 1] : xv;
    if (p.silu) s = s / (1.f + expf(-s));
    out[int64_t(q0 + t) * p.o_s0 + c] = cvt<TA>(s);
  }
}

// New state of each sequence: ext[n + j], j < K-1, where ext = [old state (or zeros) | x].
// One thread per (channel, sequence) updates its column in place in ascending j: it reads old
// row n + j > j, which it has not overwritten yet.
template <class TA>
__global__ void conv_state_kernel(ConvParams p) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int b = blockIdx.y;
  const int slot = p.slots[b];
  if (c >= p.C || slot < 0) return;  // padding rows (slot < 0) keep no state
  const int q0 = p.qsl[b], n = p.qsl[b + 1] - q0, K = p.K;
  const bool has_init = p.init[b] != 0;
  const int64_t base = int64_t(slot) * p.st_s0 + int64_t(c) * p.st_s2;
  const TA* x = static_cast<const TA*>(p.x);
  for (int j = 0; j < K - 1; ++j) {
    const int e = n + j;  // index into ext
    float v;
    if (e >= K - 1)
      v = ld(x, int64_t(q0 + e - (K - 1)) * p.x_s0 + c);
    else
      v = has_init ? ld_rt(p.state, p.st_code, base + int64_t(e) * p.st_s1) : 0.f;
    st_rt(p.state, p.st_code, base + int64_t(j) * p.st_s1, v);
  }
}

void causal_conv1d(const CausalConv1dArgs& a, Stream& s) {
  const int B = int(a.query_start_loc.size(0)) - 1;
  if (B <= 0) return;
  ConvParams p{};
  p.x = a.x.data;
  p.out = a.out.data;
  p.w = a.weight.data;
  p.state = a.conv_state.data;
  p.qsl = a.query_start_loc.ptr<int32_t>();
  p.slots = a.state_slots.ptr<int32_t>();
  p.init = a.has_initial_state.ptr<int32_t>();
  p.x_s0 = a.x.strides[0];
  p.o_s0 = a.out.strides[0];
  p.w_s0 = a.weight.strides[0];
  p.w_s1 = a.weight.strides[1];
  p.st_s0 = a.conv_state.strides[0];
  p.st_s1 = a.conv_state.strides[1];
  p.st_s2 = a.conv_state.strides[2];
  p.C = int(a.x.size(1));
  p.K = int(a.weight.size(1));
  p.w_code = rt_code(a.weight.dtype);
  p.st_code = rt_code(a.conv_state.dtype);
  p.silu = a.silu;
  if (p.K < 1 || p.K > kConvMaxK) fail("causal_conv1d: kernel width outside 1..16");
  if (a.x.dtype != a.out.dtype) fail("causal_conv1d: x and out dtypes differ");
  // Token chunks per sequence from the caller's bound on the longest query (never a host mirror:
  // under graph capture the grid must hold for every replay); chunks past a sequence's own
  // length exit on the device.
  if (a.x.size(0) == 0) return;
  const int max_q = a.max_q_len;
  if (max_q <= 0) fail("causal_conv1d: max_q_len must bound the longest query (got <= 0)");
  const unsigned cblocks = unsigned((p.C + kConvThreads - 1) / kConvThreads);
  const unsigned chunks = unsigned((max_q + kConvChunk - 1) / kConvChunk);
  dispatch_float(a.x.dtype, [&](auto ta) {
    using TA = typename decltype(ta)::type;
    launch_programmatic(s, conv_kernel<TA>, dim3(cblocks, chunks, unsigned(B)), dim3(kConvThreads), 0, p);
    if (p.K > 1) launch_programmatic(s, conv_state_kernel<TA>, dim3(cblocks, unsigned(B)), dim3(kConvThreads), 0, p);
  });
  check_launch("causal_conv1d");
}

bool conv_supports(const OpDesc& d, const DeviceCaps&) {
  return is_gpu_float(d.dtype[0]) && is_gpu_float(d.dtype[1]) && is_gpu_float(d.dtype[2]) && d.dim[1] >= 1 &&
         d.dim[1] <= kConvMaxK;
}

// ---- gated delta rule ----
constexpr int kRuleThreads = 128;
constexpr int kRowGroups = 8;                         // threads sharing one state column
constexpr int kRuleCols = kRuleThreads / kRowGroups;  // state columns per block (16)
constexpr int kRuleMaxRows = 32;                      // state rows per thread: Dk <= 256
constexpr int kRuleMaxDk = kRuleMaxRows * kRowGroups;
static_assert(kRowGroups <= kWarpSize && (kRowGroups & (kRowGroups - 1)) == 0, "row groups are low lane bits");

struct RuleParams {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  const void* a;
  const void* b;
  const void* A_log;
  const void* dt_bias;
  void* state;
  const int32_t* qsl;
  const int32_t* slots;
  const int32_t* init;
  int64_t q_s0, q_s1, k_s0, k_s1, v_s0, v_s1, o_s0, o_s1, a_s0, a_s1, b_s0, b_s1, Al_s0, dt_s0;
  int64_t st_s0, st_s1, st_s2, st_s3;
  int Dk, Dv, r;  // r = Hv / Hk
  int ab_code, Al_code, dt_code, st_code;
  float scale;
  bool l2norm;
};

__device__ __forceinline__ float rowgroup_sum(float v) {
#pragma unroll
  for (int m = 1; m < kRowGroups; m <<= 1) v += gpu_shfl_xor(v, m);
  return v;
}

template <class TA>
__global__ void __launch_bounds__(kRuleThreads) rule_kernel(RuleParams p) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int h = blockIdx.y, b = blockIdx.z;
  const int rg = threadIdx.x % kRowGroups, cl = threadIdx.x / kRowGroups;
  const int col = blockIdx.x * kRuleCols + cl;
  const bool col_ok = col < p.Dv;
  const int Dk = p.Dk, kh = h / p.r;
  const int lane = threadIdx.x % kWarpSize;
  const int q0 = p.qsl[b], n = p.qsl[b + 1] - q0;
  // A padding row (slot < 0) starts from zeros and writes no state; both are block-uniform, so
  // the barriers in the state load / store loops below are reached by every thread or none.
  const bool has_slot = p.slots[b] >= 0;
  const int64_t sbase = has_slot ? int64_t(p.slots[b]) * p.st_s0 + int64_t(h) * p.st_s1 : 0;
  const bool has_init = has_slot && p.init[b] != 0;

  __shared__ float s_tile[kRuleMaxDk > 128 ? 128 : kRuleMaxDk][kRuleCols + 1];  // state staging (coalesced I/O)
  __shared__ float sq[kRuleMaxDk], sk[kRuleMaxDk];
  constexpr int kStage = kRuleMaxDk > 128 ? 128 : kRuleMaxDk;

  // Load this block's [Dk, kRuleCols] state slice (zeros without initial state), staged through
  // shared memory so the global reads are row-contiguous.
  float S[kRuleMaxRows];
#pragma unroll
  for (int i = 0; i < kRuleMaxRows; ++i) S[i] = 0.f;
  for (int r0 = 0; r0 < Dk; r0 += kStage) {
    const int rows = min(kStage, Dk - r0);
    if (has_init) {
      __syncthreads();
      for (int e = threadIdx.x; e < rows * kRuleCols; e += kRuleThreads) {
        const int i = e / kRuleCols, j = e % kRuleCols, c = blockIdx.x * kRuleCols + j;
        s_tile[i][j] = c < p.Dv ? ld_rt(p.state, p.st_code, sbase + int64_t(r0 + i) * p.st_s2 + int64_t(c) * p.st_s3) : 0.f;
      }
      __syncthreads();
#pragma unroll
      for (int ii = 0; ii < kRuleMaxRows; ++ii) {
        const int i = rg + ii * kRowGroups;
        if (i >= r0 && i < r0 + rows) S[ii] = s_tile[i - r0][cl];
      }
    }
  }

  const TA* q = static_cast<const TA*>(p.q);
  const TA* k = static_cast<const TA*>(p.k);
  const TA* v = static_cast<const TA*>(p.v);
  TA* out = static_cast<TA*>(p.out);
  const float A = expf(ld_rt(p.A_log, p.Al_code, int64_t(h) * p.Al_s0));
  const float dt = ld_rt(p.dt_bias, p.dt_code, int64_t(h) * p.dt_s0);
  // Token t+1's inputs are loaded into registers while token t is computed (the loads stay in
  // flight across the compute), then stored to shared memory at the top of the next iteration.
  constexpr int kPerThread = kRuleMaxDk / kRuleThreads;
  float nq[kPerThread], nk[kPerThread], nv = 0.f, na = 0.f, nb = 0.f;
  auto load_token = [&](int t) {
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = threadIdx.x + u * kRuleThreads;
      nq[u] = i < Dk ? ld(q, int64_t(t) * p.q_s0 + int64_t(kh) * p.q_s1 + i) : 0.f;
      nk[u] = i < Dk ? ld(k, int64_t(t) * p.k_s0 + int64_t(kh) * p.k_s1 + i) : 0.f;
    }
    nv = col_ok ? ld(v, int64_t(t) * p.v_s0 + int64_t(h) * p.v_s1 + col) : 0.f;
    nb = ld_rt(p.b, p.ab_code, int64_t(t) * p.b_s0 + int64_t(h) * p.b_s1);
    na = ld_rt(p.a, p.ab_code, int64_t(t) * p.a_s0 + int64_t(h) * p.a_s1);
  };
  if (n > 0) load_token(q0);
  for (int t = q0; t < q0 + n; ++t) {
    __syncthreads();  // previous token's readers of sq/sk are done
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = threadIdx.x + u * kRuleThreads;
      if (i < Dk) {
        sq[i] = nq[u];
        sk[i] = nk[u];
      }
    }
    const float vt = nv, braw = nb, araw = na;
    __syncthreads();
    if (t + 1 < q0 + n) load_token(t + 1);
    // l2 norms: each warp sums the squares itself (no extra block barrier).
    float qn = p.scale, kn = 1.f;
    if (p.l2norm) {
      float qq = 0.f, kk = 0.f;
      for (int i = lane; i < Dk; i += kWarpSize) {
        qq += sq[i] * sq[i];
        kk += sk[i] * sk[i];
      }
      qq = warp_sum(qq);
      kk = warp_sum(kk);
      qn = rsqrtf(qq + 1e-6f) * p.scale;
      kn = rsqrtf(kk + 1e-6f);
    }
    const float beta = 1.f / (1.f + expf(-braw));
    const float x = araw + dt;
    const float sp = x > 20.f ? x : log1pf(expf(x));  // softplus, torch's threshold 20
    const float decay = expf(-A * sp);
    // S *= decay; m = S^T k (this thread's rows, then across the row groups)
    float m = 0.f;
#pragma unroll
    for (int ii = 0; ii < kRuleMaxRows; ++ii) {
      const int i = rg + ii * kRowGroups;
      if (i < Dk) {
        S[ii] *= decay;
        m += S[ii] * (sk[i] * kn);
      }
    }
    m = rowgroup_sum(m);
    const float delta = beta * (vt - m);
    float o = 0.f;
#pragma unroll
    for (int ii = 0; ii < kRuleMaxRows; ++ii) {
      const int i = rg + ii * kRowGroups;
      if (i < Dk) {
        S[ii] += (sk[i] * kn) * delta;
        o += S[ii] * (sq[i] * qn);
      }
    }
    o = rowgroup_sum(o);
    if (rg == 0 && col_ok) out[int64_t(t) * p.o_s0 + int64_t(h) * p.o_s1 + col] = cvt<TA>(o);
  }

  // Write the final state back (always, as the op requires), staged the same way.
  if (!has_slot) return;
  for (int r0 = 0; r0 < Dk; r0 += kStage) {
    const int rows = min(kStage, Dk - r0);
    __syncthreads();
#pragma unroll
    for (int ii = 0; ii < kRuleMaxRows; ++ii) {
      const int i = rg + ii * kRowGroups;
      if (i >= r0 && i < r0 + rows) s_tile[i - r0][cl] = S[ii];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < rows * kRuleCols; e += kRuleThreads) {
      const int i = e / kRuleCols, j = e % kRuleCols, c = blockIdx.x * kRuleCols + j;
      if (c < p.Dv) st_rt(p.state, p.st_code, sbase + int64_t(r0 + i) * p.st_s2 + int64_t(c) * p.st_s3, s_tile[i][j]);
    }
  }
}

void gated_delta_rule(const GatedDeltaRuleArgs& a, Stream& s) {
  const int B = int(a.query_start_loc.size(0)) - 1;
  if (B <= 0) return;
  const int Hk = int(a.q.size(1)), Hv = int(a.v.size(1));
  RuleParams p{};
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.out = a.out.data;
  p.a = a.a.data;
  p.b = a.b.data;
  p.A_log = a.A_log.data;
  p.dt_bias = a.dt_bias.data;
  p.state = a.state.data;
  p.qsl = a.query_start_loc.ptr<int32_t>();
  p.slots = a.state_slots.ptr<int32_t>();
  p.init = a.has_initial_state.ptr<int32_t>();
  p.q_s0 = a.q.strides[0];
  p.q_s1 = a.q.strides[1];
  p.k_s0 = a.k.strides[0];
  p.k_s1 = a.k.strides[1];
  p.v_s0 = a.v.strides[0];
  p.v_s1 = a.v.strides[1];
  p.o_s0 = a.out.strides[0];
  p.o_s1 = a.out.strides[1];
  p.a_s0 = a.a.strides[0];
  p.a_s1 = a.a.ndim > 1 ? a.a.strides[1] : 1;
  p.b_s0 = a.b.strides[0];
  p.b_s1 = a.b.ndim > 1 ? a.b.strides[1] : 1;
  p.Al_s0 = a.A_log.strides[0];
  p.dt_s0 = a.dt_bias.strides[0];
  p.st_s0 = a.state.strides[0];
  p.st_s1 = a.state.strides[1];
  p.st_s2 = a.state.strides[2];
  p.st_s3 = a.state.strides[3];
  p.Dk = int(a.q.size(2));
  p.Dv = int(a.v.size(2));
  p.r = Hv / Hk;
  p.ab_code = rt_code(a.a.dtype);
  if (a.b.dtype != a.a.dtype) fail("gated_delta_rule: a and b dtypes differ");
  p.Al_code = rt_code(a.A_log.dtype);
  p.dt_code = rt_code(a.dt_bias.dtype);
  p.st_code = rt_code(a.state.dtype);
  p.scale = a.scale;
  p.l2norm = a.l2norm_qk;
  if (p.Dk > kRuleMaxDk) fail("gated_delta_rule: key head dim above 256");
  if (a.k.dtype != a.q.dtype || a.v.dtype != a.q.dtype || a.out.dtype != a.q.dtype)
    fail("gated_delta_rule: q, k, v and out dtypes differ");
  const unsigned col_blocks = unsigned((p.Dv + kRuleCols - 1) / kRuleCols);
  dispatch_float(a.q.dtype, [&](auto ta) {
    using TA = typename decltype(ta)::type;
    launch_programmatic(s, rule_kernel<TA>, dim3(col_blocks, unsigned(Hv), unsigned(B)), dim3(kRuleThreads), 0, p);
  });
  check_launch("gated_delta_rule");
}

bool rule_supports(const OpDesc& d, const DeviceCaps&) {
  return is_gpu_float(d.dtype[0]) && is_gpu_float(d.dtype[1]) && is_gpu_float(d.dtype[2]) && d.dim[0] >= 1 &&
         d.dim[0] <= kRuleMaxDk && d.dim[1] >= 1 && d.dim[2] >= 1;
}

// ---- gated RMSNorm: out = rmsnorm(x) * (offset + w) * silu(z), one block per row ----
template <class TA, class TW>
__global__ void gated_rms_norm_kernel(TA* out, Rows ro, const TA* x, Rows rx, const TA* z, Rows rz, const TW* w,
                                      int64_t D, float eps, float offset) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  const TA* xr = x + rx.off(r);
  const TA* zr = z + rz.off(r);
  TA* orow = out + ro.off(r);
  float ss = 0.f;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const float v = ld(xr, j);
    ss += v * v;
  }
  const float inv = rsqrtf(block_sum(ss, red) / float(D) + eps);
  // Each element is read and written by the same thread, so out may alias x.
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const float zv = ld(zr, j);
    orow[j] = cvt<TA>(ld(xr, j) * inv * (offset + ld(w, j)) * (zv / (1.f + expf(-zv))));
  }
}

Rows rows(const Tensor& t) {
  RowsDesc d = rows_of(t);
  return Rows{d.n1, d.s0, d.s1};
}

void gated_rms_norm(const GatedRmsNormArgs& a, Stream& s) {
  const int64_t R = a.x.num_rows(), D = a.x.size(-1);
  if (R == 0) return;
  if (a.z.dtype != a.x.dtype || a.out.dtype != a.x.dtype) fail("gated_rms_norm: x, z and out dtypes differ");
  // block_sum needs whole warps (kWarpSize may be 128 on MUSA).
  const int threads = std::max(kWarpSize, D <= 1024 ? 128 : 256);
  dispatch_float(a.x.dtype, [&](auto ta) {
    dispatch_float(a.weight.dtype, [&](auto tw) {
      using TA = typename decltype(ta)::type;
      using TW = typename decltype(tw)::type;
      launch_programmatic(s, gated_rms_norm_kernel<TA, TW>, dim3(unsigned(R)), dim3(threads), 0, a.out.ptr<TA>(),
                          rows(a.out), a.x.ptr<TA>(), rows(a.x), a.z.ptr<TA>(), rows(a.z), a.weight.ptr<TW>(), D, a.eps,
                          a.weight_offset);
    });
  });
  check_launch("gated_rms_norm");
}

// ---- sigmoid gate: out = x * sigmoid(gate), gate elementwise or one per row ----
template <class TA>
__global__ void sigmoid_mul_kernel(TA* out, Rows ro, const TA* x, Rows rx, const TA* g, Rows rg, int64_t D,
                                   bool per_row) {
  gpu_wait_for_predecessor();  // launched programmatically (programmatic_launch.cuh)
  gpu_allow_successor();
  const int64_t r = blockIdx.x;
  const TA* xr = x + rx.off(r);
  const TA* gr = g + rg.off(r);
  TA* orow = out + ro.off(r);
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const float gv = ld(gr, per_row ? 0 : j);
    orow[j] = cvt<TA>(ld(xr, j) / (1.f + expf(-gv)));
  }
}

void sigmoid_mul(const SigmoidMulArgs& a, Stream& s) {
  const int64_t R = a.x.num_rows(), D = a.x.size(-1);
  if (R == 0 || D == 0) return;
  if (a.gate.dtype != a.x.dtype || a.out.dtype != a.x.dtype) fail("sigmoid_mul: x, gate and out dtypes differ");
  const bool per_row = a.gate.size(-1) == 1;
  const int threads = D <= 64 ? 64 : D <= 256 ? 128 : 256;
  dispatch_float(a.x.dtype, [&](auto ta) {
    using TA = typename decltype(ta)::type;
    launch_programmatic(s, sigmoid_mul_kernel<TA>, dim3(unsigned(R)), dim3(threads), 0, a.out.ptr<TA>(), rows(a.out),
                        a.x.ptr<TA>(), rows(a.x), a.gate.ptr<TA>(), rows(a.gate), D, per_row);
  });
  check_launch("sigmoid_mul");
}
}  // namespace

void register_gdn_kernels() {
  const auto K = kKind;
  register_kernel<CausalConv1dArgs>(Op::GDN_CONV, K, "gpu.causal_conv1d", 10, conv_supports, causal_conv1d);
  register_kernel<CausalConv1dArgs>(Op::GDN_CONV_DECODE, K, "gpu.causal_conv1d", 10, conv_supports, causal_conv1d);
  register_kernel<GatedDeltaRuleArgs>(Op::GDN_RULE, K, "gpu.gated_delta_rule_recurrent", 10, rule_supports,
                                      gated_delta_rule);
  register_kernel<GatedDeltaRuleArgs>(Op::GDN_RULE_DECODE, K, "gpu.gated_delta_rule_recurrent", 10, rule_supports,
                                      gated_delta_rule);
  register_kernel<GatedRmsNormArgs>(Op::GATED_RMS_NORM, K, "gpu.gated_rms_norm", 10,
                                    [](const OpDesc& d, const DeviceCaps&) {
                                      return is_gpu_float(d.dtype[0]) && is_gpu_float(d.dtype[1]);
                                    },
                                    gated_rms_norm);
  register_kernel<SigmoidMulArgs>(Op::SIGMOID_MUL, K, "gpu.sigmoid_mul", 10,
                                  [](const OpDesc& d, const DeviceCaps&) { return is_gpu_float(d.dtype[0]); },
                                  sigmoid_mul);
}

}  // namespace portllm::gpu
