// MATMUL at M = 1 for weights the compute units can hold at once: every weight byte is in flight
// before the programmatic wait, copied into shared memory (bulk copies on sm_90, cp.async on
// sm_80). NVIDIA-only fast path (inline PTX, ARCHITECTURE.md rule 4); its portable sibling is the
// streaming GEMV of gemv.cu, which takes every shape this kernel refuses.
//
// Why: at batch 1 a decode step is a chain of kernels, and a streaming GEMV keeps only its first
// two vectors per row pair in flight before its programmatic wait; the rest of W streams after
// its predecessor ends. Here a block of one per compute unit takes ceil(N / blocks) rows and
// issues all of them before the wait; after it, the block reads x once (L2) and the products run
// from shared memory on the tensor cores (m16n8k16, x in every column of B).
//
// Where it pays (H200, `bench latency` batch 1, same binary, PORTLLM_DISABLE_KERNELS=gpu.gemv_preload
// for the other figure): Qwen3-0.6B 0.71-0.72 against 0.81 ms (its o_proj, 4 MB, and down_proj, 6 MB),
// DeepSeek-V2-Lite 2.72-2.73 against 2.75-2.76 (kv_a_proj, 2.4 MB). Where it does not: large W
// take most of a compute unit's shared memory per block, and there it lost everywhere, with
// cp.async or bulk copies alike (Qwen3-30B-A3B's 16.8 MB o_proj 2.95 against 2.85 ms per step,
// Qwen3-8B's 33.5 MB o_proj 4.37 against 4.29 at 128 tokens and 4.95 against 4.69 at 4k,
// Llama-3.1-8B 4.19 against 4.11); alone (`ops perf`) such a launch reaches ~2.5 TB/s against the
// streaming GEMV's 3.9, and in the graph its loads did not hide behind the attention. So a block
// takes at most PORTLLM_GEMV_PRELOAD_MAX_KB (default 64) of shared memory, and W at least kMinBytes.
//
// One block per compute unit but `free_units` (default 8): the attention's own blocks (one per KV
// head at batch 1) hold their compute units' shared memory while this kernel's blocks start, and a
// block that finds no room would load its rows only after the attention ends (4 left free: Qwen3-8B
// 4.48 against 4.34 ms with 8, before the 64 KB bound).
#include <algorithm>

#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/programmatic_launch.cuh"
#include "ops/op_args.h"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/bulk_copy_sm90.cuh"
#include "backends/gpu/mma_sm80.cuh"
#endif

namespace portllm::gpu {

#if !defined(PORTLLM_GPU_MUSA)
namespace {
using namespace sm80;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kTiles = 4;   // 16-row MMA tiles per block, at most (64 rows)
constexpr int kChains = 4;  // independent MMA accumulators per tile
// Shared memory the kernel declares statically (the tiles' barriers), kept out of the dynamic
// budget: a launch asks for at most the device's opt-in size less this.
constexpr size_t kStaticSmem = 1024;
// Below this W has nothing worth hiding, and the kernel's fixed costs (barriers, the partial sums'
// round through shared memory) exceed the streaming GEMV's: with Qwen3.5-35B-A3B's 64-row and 1-row
// projections on it, a step took 3.68 against 3.62 ms.
constexpr int64_t kMinBytes = int64_t(1) << 20;

// Compute units left to the kernels this one overlaps (PORTLLM_GEMV_PRELOAD_FREE_UNITS, read once).
int free_units() {
  static const int v = std::max(0, env_int("PORTLLM_GEMV_PRELOAD_FREE_UNITS", 8));
  return v;
}
// Whether a launch keeps its blocks on separate compute units (PORTLLM_GEMV_PRELOAD_ONE_PER_UNIT, read once).
bool one_per_unit() {
  static const bool v = env_int("PORTLLM_GEMV_PRELOAD_ONE_PER_UNIT", 1) != 0;
  return v;
}
// The most shared memory a block may take (PORTLLM_GEMV_PRELOAD_MAX_KB, read once).
size_t max_block_smem() {
  static const size_t v = size_t(std::max(1, env_int("PORTLLM_GEMV_PRELOAD_MAX_KB", 64))) * 1024;
  return v;
}

// How a launch splits W [N, K]: `blocks` blocks of `rows` rows. Shared memory: the rows (stride
// K + 8: ldmatrix reads 8 rows without bank conflicts), x, and the warps' partial sums
// [rows][kWarps]. `fits`: the plan holds W and stays in the bounds above.
struct Plan {
  int blocks = 0, rows = 0;
  size_t smem = 0, launch_smem = 0;  // what the block uses; what a launch asks for
  bool fits = false;
};

Plan plan_for(int64_t N, int64_t K, const DeviceCaps& c) {
  Plan p;
  const int64_t units = c.num_compute_units - free_units();
  if (units < 1 || N < 1 || K < 128 || K % 128 != 0) return p;  // K / kWarps: whole 16-wide MMA steps
  p.rows = int((N + units - 1) / units);
  p.blocks = int((N + p.rows - 1) / p.rows);
  p.smem = size_t(p.rows) * size_t(K + 8) * 2 + size_t(K) * 2 + size_t(p.rows) * kWarps * 4;
  const size_t cap = c.shared_mem_per_block_optin > kStaticSmem ? c.shared_mem_per_block_optin - kStaticSmem : 0;
  p.fits = p.rows <= kTiles * 16 && p.smem <= std::min(cap, max_block_smem()) && N * K * 2 >= kMinBytes;
  // One block per compute unit: a launch asks for more than half of a unit's shared memory, so no
  // two blocks share a unit's load bandwidth while others sit idle. Packed as the device pleased
  // (PORTLLM_GEMV_PRELOAD_ONE_PER_UNIT=0), Qwen3-0.6B took 0.77 against 0.71 ms per step.
  if (one_per_unit()) p.launch_smem = std::max(p.smem, std::min(cap, c.shared_mem_per_block_optin / 2 + 1024));
  else p.launch_smem = p.smem;
  return p;
}

// cp.async.wait_group takes a constant: tiles 0..t have landed once at most kTiles - 1 - t of the
// kTiles groups are pending.
[[maybe_unused]] __device__ __forceinline__ void wait_tiles_through(int t) {  // sm_80 path
  static_assert(kTiles == 4, "one case per tile");
  switch (t) {
    case 0: cp_async_wait<3>(); break;
    case 1: cp_async_wait<2>(); break;
    case 2: cp_async_wait<1>(); break;
    default: cp_async_wait<0>(); break;
  }
}

// Block b computes out[n0 + r] for r < its rows. Warp w takes the K slice [w K/8, (w+1) K/8) of
// every row, 16-row tiles through m16n8k16 MMAs (x in every column of B, so each accumulator
// column holds the products); the warps' partial sums meet in shared memory and are added in warp
// order.
template <class T, class TO>
__global__ void __launch_bounds__(kThreads, 1)
    gemv_preload_kernel(TO* __restrict__ out, const T* __restrict__ x, const T* __restrict__ w, int64_t w_ld,
                        const void* bias, DType bias_t, int N, int K, int rows_per_block) {
  extern __shared__ __align__(16) unsigned char gemv_preload_smem[];
  const int vpr = K / 8, ld = K + 8;  // 16-byte vectors per row; shared row stride (elements)
  const int tid = int(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int n0 = int(blockIdx.x) * rows_per_block;
  const int nr = min(rows_per_block, N - n0);
  T* ws = reinterpret_cast<T*>(gemv_preload_smem);
  T* xs = ws + size_t(rows_per_block) * ld;
  float* red = reinterpret_cast<float*>(xs + K);  // [rows][kWarps]
  const int kslice = K / kWarps, kw0 = warp * kslice;

  // Before the wait: W is no kernel's output. Tile t (16 rows) lands on bars[t] (bulk copies,
  // sm_90) or in commit group t (cp.async, sm_80; empty groups too, so the count is fixed).
#if __CUDA_ARCH__ >= 900
  __shared__ uint64_t bars[kTiles];
  if (tid == 0)
    for (int t = 0; t < kTiles; ++t) sm90::mbar_init(&bars[t], 1);
  __syncthreads();
  if (warp == 0) {
    for (int t = 0; t < kTiles && 16 * t < nr; ++t) {
      const int r1 = min(nr, 16 * (t + 1));
      if (lane == 0) sm90::mbar_arrive_expect_tx(&bars[t], uint32_t(r1 - 16 * t) * uint32_t(K) * 2u);
      __syncwarp();
      for (int r = 16 * t + lane; r < r1; r += kWarpSize)
        sm90::bulk_copy_g2s(ws + size_t(r) * ld, w + int64_t(n0 + r) * w_ld, uint32_t(K) * 2u, &bars[t]);
    }
  }
#else
  for (int t = 0; t < kTiles; ++t) {
    const int i1 = min(nr, 16 * (t + 1)) * vpr;
    for (int i = 16 * t * vpr + tid; i < i1; i += kThreads) {
      const int r = i / vpr, c = i - r * vpr;
      cp_async16(ws + size_t(r) * ld + 8 * c, w + int64_t(n0 + r) * w_ld + 8 * c, 16);
    }
    cp_async_commit();
  }
#endif
  gpu_wait_for_predecessor();
  gpu_allow_successor();

  for (int c = tid; c < vpr; c += kThreads)
    reinterpret_cast<uint4*>(xs)[c] = *reinterpret_cast<const uint4*>(x + 8 * c);
  const int g = lane / 4, q = lane % 4;
  for (int t = 0; t < kTiles && 16 * t < nr; ++t) {  // block-uniform
#if __CUDA_ARCH__ >= 900
    sm90::mbar_wait(&bars[t], 0);
#else
    wait_tiles_through(t);
#endif
    __syncthreads();  // x (t = 0) and tile t (cp.async: copied by every thread) are visible
    // kChains accumulators: the MMAs of one chain wait on each other, the chains do not.
    float acc[kChains][4] = {};
    const T* arow = ws + size_t(min(16 * t + lane % 16, nr - 1)) * ld + kw0 + (lane / 16) * 8;  // padding rows: any loaded row
    for (int k0 = 0; k0 < kslice; k0 += 16 * kChains) {
#pragma unroll
      for (int ch = 0; ch < kChains; ++ch) {
        const int k = k0 + 16 * ch;
        if (k >= kslice) break;
        uint32_t a[4];
        ldsm_x4(a, arow + k);
        const uint32_t* xb = reinterpret_cast<const uint32_t*>(xs + kw0 + k) + q;
        Mma<T>::run(acc[ch], a, xb[0], xb[4]);
      }
    }
    if (q == 0) {  // column 0 of rows g and g + 8
      float lo = 0.f, hi = 0.f;
#pragma unroll
      for (int ch = 0; ch < kChains; ++ch) {
        lo += acc[ch][0];
        hi += acc[ch][2];
      }
      if (16 * t + g < nr) red[(16 * t + g) * kWarps + warp] = lo;
      if (16 * t + g + 8 < nr) red[(16 * t + g + 8) * kWarps + warp] = hi;
    }
  }
  __syncthreads();
  for (int r = tid; r < nr; r += kThreads) {
    float s = 0.f;
    for (int i = 0; i < kWarps; ++i) s += red[r * kWarps + i];
    out[n0 + r] = cvt<TO>(s + bias_value(bias, bias_t, n0 + r));
  }
}

template <class T, class TO>
void launch(const MatmulArgs& a, const Plan& p, Stream& s) {
  auto* kernel = gemv_preload_kernel<T, TO>;
  static const bool sized = [&] {  // once per instantiation: opt into the device's shared memory
    (void)gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize,
                              int(caps_of(s).shared_mem_per_block_optin - kStaticSmem));
    return true;
  }();
  (void)sized;
  launch_programmatic(s, kernel, dim3(unsigned(p.blocks)), dim3(kThreads), p.launch_smem, a.out.ptr<TO>(),
                      static_cast<const T*>(a.x.data), static_cast<const T*>(a.w.data), a.w.strides[0],
                      a.bias.defined() ? a.bias.data : nullptr, a.bias.defined() ? a.bias.dtype : DType::F32,
                      int(a.w.size(0)), int(a.w.size(1)), p.rows);
}

void gemv_preload(const MatmulArgs& a, Stream& s) {
  if (a.w.size(0) == 0) return;
  const Plan p = plan_for(a.w.size(0), a.w.size(1), caps_of(s));
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_float(a.out.dtype, [&](auto to) { launch<T, typename decltype(to)::type>(a, p, s); });
  };
  if (a.x.dtype == DType::BF16) go(Tag<gpu_bf16>{});
  else go(Tag<gpu_half>{});
  check_launch("gemv_preload");
}

// M = 1, matching bf16/f16 operands, and a W inside the plan's bounds; the others (the LM head,
// the 8B models' projections, Qwen3-30B-A3B's o_proj) stream through gemv.cu. The descriptor
// carries no strides: run() hands views that are not rows of 16-byte vectors to gemv.cu.
bool supports(const OpDesc& d, const DeviceCaps& c) {
  const DType x = d.dtype[0], w = d.dtype[1];
  if (c.vendor != "nvidia" || c.arch < 80 || d.dim[0] != 1 || x != w || (x != DType::BF16 && x != DType::F16) ||
      d.dim[2] % 8 != 0 || d.dim[1] > (int64_t(1) << 30))
    return false;
  return plan_for(d.dim[1], d.dim[2], c).fits;
}

void run(const MatmulArgs& a, Stream& s) {
  // Views whose rows are not 16-byte vectors take the streaming GEMV's own fallbacks.
  if (!aligned16(a.x.data) || !aligned16(a.w.data) || a.w.strides[0] % 8 != 0 || a.x.strides[1] != 1 ||
      a.w.strides[1] != 1)
    return run_kernel("gpu.gemv_small_m", &a, s);
  gemv_preload(a, s);
}
}  // namespace

void register_gemv_preload_kernels() {
  register_kernel<MatmulArgs>(Op::MATMUL, DeviceKind::CUDA, "gpu.gemv_preload", 25, supports, run);
}
#else
void register_gemv_preload_kernels() {}  // NVIDIA-only fast path; MUSA streams through gemv.cu
#endif

}  // namespace portllm::gpu
