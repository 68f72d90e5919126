// MoE routing, permutation and combine (the grouped GEMM is moe_gemm.cu). Semantics are the
// reference's (ops/ref/moe_ref.cpp, moe_route_math.h); portable CUDA C++, any warp size.
//
// Routing: one block of one warp per token, scores in double like the reference (so near ties
// resolve the same way); top-k and the group choice by repeated warp argmax, ties -> lower id.
// Permutation (deterministic, no host sync): chunks of 256 assignments in t*k+j order;
// (1) per-chunk expert histograms (and sorted_token = -1), (2) one block turns them into each
// chunk's starting rank per expert and the aligned expert_offsets, (3) each assignment's row =
// offsets[e] + chunk start rank + its rank among earlier same-expert assignments of its chunk,
// (4) every row gathers its token's x (zeros for padding).
#include <cmath>

#include "backends/gpu/block_scan.cuh"
#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "ops/op_args_moe.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;

gpuStream_t st(Stream& s) { return native_stream(s); }

// ---------------------------------------------------------------- routing
struct RouteParams {
  int32_t* ids;
  int64_t ids_s0, ids_s1;
  float* wts;
  int64_t w_s0, w_s1;
  const float* logits;
  int64_t l_s0, l_s1;
  const float* bias;  // may be null
  int64_t b_s0;
  int E, k, G, topk_group;
  bool renorm, sigmoid, top2;
  float scale;
};

size_t route_smem_bytes(int64_t E, int64_t G, int64_t k) {
  return size_t(2 * E + G) * sizeof(double) + size_t(E + G + k) * sizeof(int);
}

// (ov, oi) replaces (bv, bi) if it is valid and better: higher value, ties -> lower index.
__device__ __forceinline__ void arg_better(double ov, int oi, double& bv, int& bi) {
  if (oi >= 0 && (bi < 0 || ov > bv || (ov == bv && oi < bi))) {
    bv = ov;
    bi = oi;
  }
}
// Every lane ends with the warp's best (value, index).
__device__ __forceinline__ void warp_argmax(double& bv, int& bi) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) {
    const double ov = gpu_shfl_xor(bv, m);
    const int oi = gpu_shfl_xor(bi, m);
    arg_better(ov, oi, bv, bi);
  }
}
__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v += gpu_shfl_xor(v, m);
  return v;
}
__device__ __forceinline__ double warp_max_d(double v) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m >>= 1) v = fmax(v, gpu_shfl_xor(v, m));
  return v;
}

// One block of kWarpSize threads per token.
__global__ void route_kernel(RouteParams p) {
  extern __shared__ double route_smem[];
  const int E = p.E, G = p.G, lane = int(threadIdx.x);
  const int64_t t = blockIdx.x;
  gpu_wait_for_predecessor();  // launched programmatically: the router logits are the previous GEMV's
  gpu_allow_successor();
  double* score = route_smem;  // [E] unbiased scores
  double* sel = score + E;     // [E] selection scores (biased, group-masked)
  double* gsc = sel + E;       // [G] group scores
  int* taken = reinterpret_cast<int*>(gsc + G);  // [E]
  int* keep = taken + E;                         // [G]
  int* chosen = keep + G;                        // [k]
  const float* lrow = p.logits + t * p.l_s0;

  if (p.sigmoid) {
    for (int e = lane; e < E; e += kWarpSize) score[e] = 1.0 / (1.0 + exp(-double(lrow[e * p.l_s1])));
  } else {
    double m = -INFINITY;
    for (int e = lane; e < E; e += kWarpSize) m = fmax(m, double(lrow[e * p.l_s1]));
    m = warp_max_d(m);
    double sum = 0;
    for (int e = lane; e < E; e += kWarpSize) {
      const double v = exp(double(lrow[e * p.l_s1]) - m);
      score[e] = v;
      sum += v;
    }
    sum = warp_sum_d(sum);
    for (int e = lane; e < E; e += kWarpSize) score[e] /= sum;
  }
  for (int e = lane; e < E; e += kWarpSize) {
    const double v = score[e] + (p.bias ? double(p.bias[e * p.b_s0]) : 0.0);
    sel[e] = isnan(v) ? -INFINITY : v;  // NaN ranks below every number (MoeRouteArgs)
    taken[e] = 0;
  }
  __syncthreads();

  if (G > 1) {
    const int per = E / G;
    for (int g = lane; g < G; g += kWarpSize) {
      double b1 = -INFINITY, b2 = -INFINITY;  // best and second best of the group
      for (int i = 0; i < per; ++i) {
        const double v = sel[g * per + i];
        if (v > b1) {
          b2 = b1;
          b1 = v;
        } else if (v > b2) {
          b2 = v;
        }
      }
      gsc[g] = p.top2 && per >= 2 ? b1 + b2 : b1;
      keep[g] = 0;
    }
    __syncthreads();
    const int nkeep = p.topk_group < G ? p.topk_group : G;
    for (int i = 0; i < nkeep; ++i) {
      double bv = 0;
      int bi = -1;
      for (int g = lane; g < G; g += kWarpSize)
        if (!keep[g]) arg_better(gsc[g], g, bv, bi);
      warp_argmax(bv, bi);
      __syncthreads();  // every lane has read keep[] before it changes
      if (lane == 0 && bi >= 0) keep[bi] = 1;
      __syncthreads();
    }
    for (int e = lane; e < E; e += kWarpSize)
      if (!keep[e / per]) sel[e] = -INFINITY;
    __syncthreads();
  }

  for (int j = 0; j < p.k; ++j) {
    double bv = 0;
    int bi = -1;
    for (int e = lane; e < E; e += kWarpSize)
      if (!taken[e]) arg_better(sel[e], e, bv, bi);
    warp_argmax(bv, bi);
    __syncthreads();  // every lane has read taken[] before it changes
    if (lane == 0) {
      chosen[j] = bi;
      if (bi >= 0) taken[bi] = 1;
    }
    __syncthreads();
  }

  if (lane == 0) {
    double sum = 0;
    for (int j = 0; j < p.k; ++j) sum += score[chosen[j]];
    for (int j = 0; j < p.k; ++j) {
      const int e = chosen[j];
      double w = score[e];
      if (p.renorm) w /= sum;
      p.ids[t * p.ids_s0 + j * p.ids_s1] = e;
      p.wts[t * p.w_s0 + j * p.w_s1] = float(w * double(p.scale));
    }
  }
}

// Ungrouped routing (G = 1, the Qwen3-MoE / DeepSeek-V2 case) with each lane's scores in
// registers: lane l holds experts l + kWarpSize i, i < NE. The same double math and the same
// selection order as route_kernel (ties: lower id), but the k rounds of the top-k are a register
// scan and a warp argmax each, with no shared memory and no barriers: route_kernel's k rounds of
// two block barriers and a shared-memory pass made a batch-1 routing several microseconds, on the
// path between the router GEMV and the expert GEMMs of every MoE layer. Lane j ends holding
// choice j (so k <= kWarpSize), and the weight sum is accumulated in choice order, as before.
template <int NE>
__global__ void route_flat_kernel(RouteParams p) {
  const int E = p.E, lane = int(threadIdx.x);
  const int64_t t = blockIdx.x;
  gpu_wait_for_predecessor();  // launched programmatically: the router logits are the previous GEMV's
  gpu_allow_successor();
  const float* lrow = p.logits + t * p.l_s0;
  double sc[NE], sel[NE];
  unsigned taken = 0;  // bit i: expert lane + kWarpSize i chosen (or absent)
#pragma unroll
  for (int i = 0; i < NE; ++i) {
    const int e = lane + kWarpSize * i;
    sc[i] = e < E ? double(lrow[e * p.l_s1]) : 0.0;
    if (e >= E) taken |= 1u << i;
  }
  if (p.sigmoid) {
#pragma unroll
    for (int i = 0; i < NE; ++i) sc[i] = 1.0 / (1.0 + exp(-sc[i]));
  } else {
    double m = -INFINITY;
#pragma unroll
    for (int i = 0; i < NE; ++i)
      if (!(taken >> i & 1u)) m = fmax(m, sc[i]);
    m = warp_max_d(m);
    double sum = 0;
#pragma unroll
    for (int i = 0; i < NE; ++i) {
      sc[i] = (taken >> i & 1u) ? 0.0 : exp(sc[i] - m);
      sum += sc[i];
    }
    sum = warp_sum_d(sum);
#pragma unroll
    for (int i = 0; i < NE; ++i) sc[i] /= sum;
  }
#pragma unroll
  for (int i = 0; i < NE; ++i) {
    const int e = lane + kWarpSize * i;
    sel[i] = sc[i] + (p.bias && e < E ? double(p.bias[e * p.b_s0]) : 0.0);
    // NaN ranks below every number (MoeRouteArgs): with NaN scores the lanes' argmax rounds would
    // disagree, every lane taking its own candidate, and the rounds past the lanes' slots end with
    // no expert (id -1, which the expert GEMMs would follow out of bounds).
    if (isnan(sel[i])) sel[i] = -INFINITY;
  }
  int my_id = -1;
  double my_score = 0, sum = 0;
  for (int j = 0; j < p.k; ++j) {
    double bv = 0;
    int bi = -1;
#pragma unroll
    for (int i = 0; i < NE; ++i)
      if (!(taken >> i & 1u)) arg_better(sel[i], lane + kWarpSize * i, bv, bi);
    warp_argmax(bv, bi);  // bi >= 0: k <= E
    const int owner = bi % kWarpSize, slot = bi / kWarpSize;
    double mine = 0;
#pragma unroll
    for (int i = 0; i < NE; ++i)
      if (i == slot) mine = sc[i];
    if (lane == owner) taken |= 1u << slot;
    const double score = gpu_shfl(mine, owner);
    sum += score;
    if (lane == j) {
      my_id = bi;
      my_score = score;
    }
  }
  if (lane < p.k) {
    double w = my_score;
    if (p.renorm) w /= sum;
    p.ids[t * p.ids_s0 + lane * p.ids_s1] = my_id;
    p.wts[t * p.w_s0 + lane * p.w_s1] = float(w * double(p.scale));
  }
}

// The plain router (one group, softmax, no bias) by one block per token, one thread per expert:
// the same math as route_flat_kernel with one group and no bias, bit for bit (double scores, the
// same summation orders: lane l of one warp adds experts l, l + kWarpSize, ... then a butterfly,
// and the chosen scores in choice order), but its k rounds of warp argmax are taken as ranks:
// expert e is choice r when r experts beat it (a higher score, or an equal one and a lower id),
// which every thread counts at once in one pass over the scores, compared as the integers of their
// bits (scores are >= +0; NaN ranks lowest). It is on the batch-1 critical path of every MoE layer
// (router GEMV -> this -> the expert GEMV): H200, Qwen3-30B-A3B in the decode graph, 3.7 us per
// layer against route_flat's 5.2 (in-graph trace), TPOT 2.89-2.90 against 2.98 ms; with double
// compares in the rank pass it gained ~0.02 ms (BENCHMARKS.md, twelfth session).
// Dynamic shared memory: route_block_smem(E, k).
size_t route_block_smem(int64_t E, int64_t k) { return size_t(2 * E + kWarpSize + 1 + k) * sizeof(double); }

__global__ void route_block_kernel(RouteParams p) {
  extern __shared__ double rb_smem[];
  const int E = p.E, k = p.k, tid = int(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int nw = int(blockDim.x) / kWarpSize;  // blockDim.x = E rounded up to whole warps
  double* sc = rb_smem;                                          // [E] scores
  long long* key = reinterpret_cast<long long*>(sc + E);         // [E] their rank keys
  double* red = sc + 2 * E;                                      // [kWarpSize + 1] reductions
  double* chosen = red + kWarpSize + 1;                          // [k] the chosen scores
  const int64_t t = blockIdx.x;
  gpu_wait_for_predecessor();  // launched programmatically: the router logits are the previous GEMV's
  gpu_allow_successor();
  const bool mine = tid < E;  // one expert per thread
  double v = mine ? double(p.logits[t * p.l_s0 + tid * p.l_s1]) : -INFINITY;
  const double wm = warp_max_d(v);
  if (lane == 0) red[warp] = wm;
  __syncthreads();
  double m = red[0];
  for (int w = 1; w < nw; ++w) m = fmax(m, red[w]);
  if (mine) sc[tid] = exp(v - m);
  __syncthreads();
  if (warp == 0) {  // the sum in the warp kernels' order
    double sum = 0;
    for (int e = lane; e < E; e += kWarpSize) sum += sc[e];
    sum = warp_sum_d(sum);
    if (lane == 0) red[kWarpSize] = sum;
  }
  __syncthreads();
  if (mine) {
    v = sc[tid] / red[kWarpSize];
    key[tid] = isnan(v) ? -1ll : __double_as_longlong(v);
  }
  __syncthreads();
  if (mine) {
    const long long k0 = key[tid];
    int rank = 0;
#pragma unroll 8
    for (int o = 0; o < E; ++o) {
      const long long ko = key[o];
      rank += (ko > k0 || (ko == k0 && o < tid)) ? 1 : 0;
    }
    if (rank < k) {
      p.ids[t * p.ids_s0 + rank * p.ids_s1] = tid;
      chosen[rank] = v;
    }
  }
  __syncthreads();
  if (tid < k) {
    double csum = 0;  // in choice order, as the warp kernels add them
    for (int j = 0; j < k; ++j) csum += chosen[j];
    p.wts[t * p.w_s0 + tid * p.w_s1] = float((p.renorm ? chosen[tid] / csum : chosen[tid]) * double(p.scale));
  }
}

// Plain routers of at most kBlockRouteExperts experts take route_block_kernel (one thread per
// expert; each rank is a pass over all E scores, so wider routers keep the warp kernel) unless
// PORTLLM_MOE_ROUTE_BLOCK=0 (read once; for A/B measurements).
constexpr int64_t kBlockRouteExperts = 256;
bool route_by_block() {
  static const bool v = env_switch("PORTLLM_MOE_ROUTE_BLOCK", {"0", "1"}, 1) == 1;
  return v;
}

// Scores per lane of route_flat_kernel for E experts: 0 when it does not take them.
int flat_slots(int64_t E, int64_t G, int64_t k) {
  if (G > 1 || k > kWarpSize) return 0;
  for (int ne : {1, 2, 4, 8, 16})
    if (E <= int64_t(ne) * kWarpSize) return ne;
  return 0;
}

void route(const MoeRouteArgs& a, Stream& s) {
  const int64_t T = a.logits.size(0), E = a.logits.size(1);
  if (T == 0) return;
  const int G = a.n_group > 1 ? a.n_group : 1;
  if (a.logits.dtype != DType::F32 || a.topk_ids.dtype != DType::I32 || a.topk_weights.dtype != DType::F32 ||
      (a.bias.defined() && a.bias.dtype != DType::F32))
    fail("moe_route: logits, bias and weights must be f32, ids i32");
  if (a.top_k < 1 || a.top_k > E || E % G != 0) fail("moe_route: need 1 <= top_k <= E and E divisible by n_group");
  RouteParams p;
  p.ids = a.topk_ids.ptr<int32_t>();
  p.ids_s0 = a.topk_ids.strides[0];
  p.ids_s1 = a.topk_ids.strides[1];
  p.wts = a.topk_weights.ptr<float>();
  p.w_s0 = a.topk_weights.strides[0];
  p.w_s1 = a.topk_weights.strides[1];
  p.logits = a.logits.ptr<float>();
  p.l_s0 = a.logits.strides[0];
  p.l_s1 = a.logits.strides[1];
  p.bias = a.bias.defined() ? a.bias.ptr<float>() : nullptr;
  p.b_s0 = a.bias.defined() ? a.bias.strides[0] : 0;
  p.E = int(E);
  p.k = a.top_k;
  p.G = G;
  p.topk_group = a.topk_group;
  p.renorm = a.renormalize;
  p.sigmoid = a.scoring == MoeScoring::Sigmoid;
  p.top2 = a.group_score == MoeGroupScore::Top2Sum;
  p.scale = a.scale;
  const dim3 grid{unsigned(T)}, block{unsigned(kWarpSize)};
  if (route_by_block() && G == 1 && !p.sigmoid && !p.bias && E <= kBlockRouteExperts) {
    const int threads = int((E + kWarpSize - 1) / kWarpSize * kWarpSize);
    launch_programmatic(s, route_block_kernel, grid, dim3(unsigned(threads)), route_block_smem(E, a.top_k), p);
    check_launch("moe_route");
    return;
  }
  switch (flat_slots(E, G, a.top_k)) {
    case 1: launch_programmatic(s, route_flat_kernel<1>, grid, block, 0, p); break;
    case 2: launch_programmatic(s, route_flat_kernel<2>, grid, block, 0, p); break;
    case 4: launch_programmatic(s, route_flat_kernel<4>, grid, block, 0, p); break;
    case 8: launch_programmatic(s, route_flat_kernel<8>, grid, block, 0, p); break;
    case 16: launch_programmatic(s, route_flat_kernel<16>, grid, block, 0, p); break;
    default: {
      const size_t smem = route_smem_bytes(E, G, a.top_k);
      if (smem > 48 * 1024) fail("moe_route: too many experts for one block's shared memory");
      launch_programmatic(s, route_kernel, grid, block, smem, p);
    }
  }
  check_launch("moe_route");
}

bool route_supports(const OpDesc& d, const DeviceCaps&) {
  const int64_t E = d.dim[0], k = d.dim[1], G = d.dim[2] > 1 ? d.dim[2] : 1;
  return d.dtype[0] == DType::F32 && d.dtype[1] == DType::F32 && E >= 1 && k >= 1 && k <= E && E % G == 0 &&
         (flat_slots(E, G, k) > 0 || route_smem_bytes(E, G, k) <= 48 * 1024);
}

// ---------------------------------------------------------------- permutation
constexpr int kChunk = 256;  // assignments per chunk = threads per block of the chunk kernels

// Per-chunk histogram hist[c * E + e]; also sorted_token[r] = -1 for every row (grid-stride).
__global__ void permute_hist_kernel(const int32_t* ids, int64_t s0, int64_t s1, int k, int64_t n, int E,
                                    int32_t* hist_out, int32_t* sorted, int64_t R) {
  extern __shared__ int hist[];  // [E]
  for (int e = threadIdx.x; e < E; e += blockDim.x) hist[e] = 0;
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < R; r += int64_t(gridDim.x) * blockDim.x)
    sorted[r] = -1;
  __syncthreads();
  const int64_t i = blockIdx.x * int64_t(kChunk) + threadIdx.x;
  if (i < n) {
    const int id = ids[(i / k) * s0 + (i % k) * s1];
    if (id >= 0 && id < E) atomicAdd(&hist[id], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) hist_out[int64_t(blockIdx.x) * E + e] = hist[e];
}

// One block: hist[c][e] becomes the number of expert-e assignments in chunks before c, and
// offsets[e + 1] = offsets[e] + (count_e rounded up to align).
__global__ void permute_offsets_kernel(int32_t* hist, int nchunks, int E, int align, int32_t* offsets) {
  __shared__ int sm[1024];
  if (threadIdx.x == 0) offsets[0] = 0;
  int carry = 0;
  for (int base = 0; base < E; base += blockDim.x) {
    const int e = base + int(threadIdx.x);
    int count = 0;
    if (e < E) {
#pragma unroll 8
      for (int c = 0; c < nchunks; ++c) {
        const int v = hist[int64_t(c) * E + e];
        hist[int64_t(c) * E + e] = count;
        count += v;
      }
    }
    const int padded = (count + align - 1) / align * align;
    int total = 0;
    const int incl = block_scan_incl(padded, sm, total);
    if (e < E) offsets[e + 1] = carry + incl;
    carry += total;
  }
}

// Row of each assignment: offsets[e] + earlier chunks' count of e + earlier same-e assignments
// in this chunk (t*k+j order, so segments keep that order).
__global__ void permute_place_kernel(const int32_t* ids, int64_t s0, int64_t s1, int k, int64_t n, int E,
                                     const int32_t* chunk_start, const int32_t* offsets, int32_t* sorted,
                                     int32_t* dst, int64_t d0, int64_t d1) {
  __shared__ int sid[kChunk];
  const int tid = int(threadIdx.x);
  const int64_t i = blockIdx.x * int64_t(kChunk) + tid;
  int id = -1;
  int64_t t = 0, j = 0;
  if (i < n) {
    t = i / k;
    j = i % k;
    id = ids[t * s0 + j * s1];
  }
  sid[tid] = id;
  __syncthreads();
  if (id < 0 || id >= E) return;
  int rank = 0;
  for (int q = 0; q < tid; ++q) rank += sid[q] == id ? 1 : 0;
  const int pos = offsets[id] + chunk_start[int64_t(blockIdx.x) * E + id] + rank;
  sorted[pos] = int32_t(t);
  dst[t * d0 + j * d1] = pos;
}

template <class T>
__global__ void permute_gather_kernel(T* xs, int64_t xs_ld, const T* x, int64_t x_ld, const int32_t* sorted,
                                      int64_t H) {
  const int64_t r = blockIdx.x;
  const int32_t t = sorted[r];
  T* dst = xs + r * xs_ld;
  if (t >= 0) {
    const T* src = x + int64_t(t) * x_ld;
    for (int64_t h = threadIdx.x; h < H; h += blockDim.x) dst[h] = src[h];
  } else {
    const T zero = cvt<T>(0.f);
    for (int64_t h = threadIdx.x; h < H; h += blockDim.x) dst[h] = zero;
  }
}

void permute(const MoePermuteArgs& a, Stream& s) {
  const int64_t T = a.topk_ids.size(0), k = a.topk_ids.size(1), H = a.x.size(1), R = a.x_sorted.size(0);
  const int E = a.num_experts, align = a.align > 1 ? a.align : 1;
  if (a.x_sorted.dtype != a.x.dtype || a.x_sorted.size(1) != H) fail("moe_permute: x_sorted must match x's dtype and width");
  if (E < 1 || a.expert_offsets.numel() < E + 1) fail("moe_permute: expert_offsets must hold num_experts + 1 entries");
  const int64_t n = T * k;
  const int64_t nchunks = std::max<int64_t>(1, (n + kChunk - 1) / kChunk);
  if (nchunks > 0x7fffffff || R > 0x7fffffff) fail("moe_permute: too many rows");
  auto hist = scratch(s, size_t(nchunks * E) * sizeof(int32_t));
  auto* hp = static_cast<int32_t*>(hist.get());
  const int32_t* ids = a.topk_ids.ptr<int32_t>();
  int32_t* sorted = a.sorted_token.ptr<int32_t>();
  int32_t* offsets = a.expert_offsets.ptr<int32_t>();
  const int64_t is0 = a.topk_ids.strides[0], is1 = a.topk_ids.strides[1];
  const int kk = int(std::max<int64_t>(k, 1));
  permute_hist_kernel<<<unsigned(nchunks), kChunk, size_t(E) * sizeof(int), st(s)>>>(ids, is0, is1, kk, n, E, hp,
                                                                                      sorted, R);
  check_launch("moe_permute hist");
  permute_offsets_kernel<<<1, 1024, 0, st(s)>>>(hp, int(nchunks), E, align, offsets);
  check_launch("moe_permute offsets");
  if (n > 0) {
    permute_place_kernel<<<unsigned(nchunks), kChunk, 0, st(s)>>>(ids, is0, is1, kk, n, E, hp, offsets, sorted,
                                                                   a.dst_row.ptr<int32_t>(), a.dst_row.strides[0],
                                                                   a.dst_row.strides[1]);
    check_launch("moe_permute place");
  }
  if (R == 0 || H == 0) return;
  dispatch_float(a.x.dtype, [&](auto tt) {
    using T_ = typename decltype(tt)::type;
    permute_gather_kernel<T_><<<unsigned(R), 128, 0, st(s)>>>(a.x_sorted.ptr<T_>(), a.x_sorted.strides[0],
                                                             a.x.ptr<T_>(), a.x.strides[0], sorted, H);
  });
  check_launch("moe_permute gather");
}

bool permute_supports(const OpDesc& d, const DeviceCaps&) {
  return is_gpu_float(d.dtype[0]) && d.dim[0] >= 1 && d.dim[0] * int64_t(sizeof(int)) <= 48 * 1024;
}

// ---------------------------------------------------------------- combine
// out[t] = shared[t] + sum_j w[t, j] * y[dst_row[t, j]]; one block per token. out may alias shared
// (each element is read, then written, by the same thread).
template <class T>
__global__ void combine_kernel(T* out, int64_t o_ld, const T* y, int64_t y_ld, const int32_t* dst, int64_t d0,
                               int64_t d1, const float* w, int64_t w0, int64_t w1, const T* sh, int64_t sh_ld, int k,
                               int64_t H) {
  const int64_t t = blockIdx.x;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
    float acc = sh ? ld(sh, t * sh_ld + h) : 0.f;
    for (int j = 0; j < k; ++j)
      acc = fmaf(w[t * w0 + j * w1], ld(y, int64_t(dst[t * d0 + j * d1]) * y_ld + h), acc);
    out[t * o_ld + h] = cvt<T>(acc);
  }
}

void combine(const MoeCombineArgs& a, Stream& s) {
  const int64_t T = a.dst_row.size(0), k = a.dst_row.size(1), H = a.y.size(1);
  if (T == 0 || H == 0) return;
  if (a.out.dtype != a.y.dtype || (a.shared.defined() && a.shared.dtype != a.y.dtype) || a.weights.dtype != DType::F32)
    fail("moe_combine: y, out and shared must share a dtype; weights must be f32");
  const bool has_shared = a.shared.defined();
  const int threads = H >= 1024 ? 256 : 128;
  dispatch_float(a.y.dtype, [&](auto tt) {
    using T_ = typename decltype(tt)::type;
    combine_kernel<T_><<<unsigned(T), threads, 0, st(s)>>>(
        a.out.ptr<T_>(), a.out.strides[0], a.y.ptr<T_>(), a.y.strides[0], a.dst_row.ptr<int32_t>(),
        a.dst_row.strides[0], a.dst_row.strides[1], a.weights.ptr<float>(), a.weights.strides[0],
        a.weights.strides[1], has_shared ? a.shared.ptr<T_>() : nullptr, has_shared ? a.shared.strides[0] : 0, int(k), H);
  });
  check_launch("moe_combine");
}

bool combine_supports(const OpDesc& d, const DeviceCaps&) { return is_gpu_float(d.dtype[0]) && d.dtype[1] == d.dtype[0]; }
}  // namespace

void register_moe_kernels() {
  const auto K = kKind;
  register_kernel<MoeRouteArgs>(Op::MOE_ROUTE_SOFTMAX, K, "gpu.moe_route", 10, route_supports, route);
  register_kernel<MoeRouteArgs>(Op::MOE_ROUTE_GROUPED, K, "gpu.moe_route_grouped", 10, route_supports, route);
  register_kernel<MoePermuteArgs>(Op::MOE_PERMUTE, K, "gpu.moe_permute", 10, permute_supports, permute);
  register_kernel<MoeCombineArgs>(Op::MOE_COMBINE, K, "gpu.moe_combine", 10, combine_supports, combine);
  register_moe_down_combine_kernels();
}

}  // namespace portllm::gpu
