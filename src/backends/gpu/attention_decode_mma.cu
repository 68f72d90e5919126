// ATTN_DECODE on NVIDIA tensor cores (sm_80+): split-KV decode for bf16/f16 caches, and for fp8
// (e4m3) caches under bf16/f16 queries (MMA fragments built from the e4m3 tiles at head dim 128,
// tiles widened in shared memory otherwise: kStageLd, kDirect below).
// NVIDIA-only fast path (inline PTX: mma.sync, ldmatrix, cp.async), ARCHITECTURE.md rule 4; its
// portable sibling is attention_decode.cu, which MUSA builds and which this kernel falls back to
// for what it does not take (f32, other mixed dtypes, head dims other than 64/128/256, unaligned
// views).
//
// Why tensor cores for a memory-bound op: the G query heads that share a KV head form the rows of
// an m16n8k16 tile (padded to 16), so one K/V tile read serves all of them and the per-key
// arithmetic (dot products, softmax bookkeeping, P V) costs a few instructions per warp instead
// of the ~70 of a CUDA-core kernel; with that gone, the kernel is a stream of cache reads.
//
// One block of W warps per (KV head, 16-row chunk of its query heads, sequence, split): 4, or 8
// where a batch leaves the compute units room (small_batch_warps). Each warp walks its own 16-key
// tiles of the split (w, w + W, ...) through a private ring of S (kStages, or large_stages())
// buffers filled by cp.async (the next tile in flight while one is multiplied), with no block
// barrier in the loop. A warp reads the block-table entries of its first 32 tiles with one load
// per lane before its first copy and hands them out by shuffle, so no copy waits on a block-table
// round trip (one per tile before).
// S = Q K^T and O += P V run as in the tensor-core prefill kernel (online softmax in base 2 on the
// accumulator fragments). At the end the W warps' (max, sum, output) are merged through shared
// memory. With an fp8 cache at head dim 128 a second form, the default since the forty-third
// session's H200 run, takes the query heads as the MMAs' N dimension instead (8 per block;
// attention_decode_heads_n.cuh; 16-bit caches opt in with PORTLLM_ATTN_HEADS_N=1).
//
// 8 warps at small batches: a 256-key split is 16 tiles, which 4 warps with 2 buffers each take
// in two rounds of cache reads and 8 in one. H200, same binary, 4 against 8 warps (`ops perf
// --cold`, Qwen3-8B heads): 12.9 / 10.9 us at 512 keys, 15.7 / 13.1 at 4k, 43.5 / 42.3 at 32k,
// Qwen3-30B-A3B heads at 192 keys 10.0 / 9.1; per step (`bench latency`, batch 1) Qwen3-8B at 128
// keys 4.38 -> 4.24 ms, at 4k 4.68 -> 4.61, Llama-3.1-8B 4.19 -> 4.06, Qwen3-30B-A3B 2.83-2.84 ->
// 2.77-2.79; Qwen3-8B batch 8 at 1k 5.40-5.57 -> 5.32.
//
// The next kernel may launch right after the wait (its weight loads then overlap this kernel), or,
// for sequences past early_trigger_keys() at small batches, only at exit (see there).
//
// Code size: a short context's launch runs most of its code once, so its machine code is fetched
// on the step's path. issue() is inlined three times (the early tiles, the prologue, the loop), so
// its common path is a strided copy (one pointer per operand), the per-row block-table path (pages
// that are not a multiple of 16 keys) a rolled loop, and the prologue keeps one copy of it: the
// batch-1 instance <bf16, 128, false, 8> is 61 KB instead of the 112 KB of the unrolled form
// (scripts/kernel_code_size.sh). H200, same binary, against the unrolled form (BENCHMARKS.md,
// eighteenth session, with the commands): Qwen3-8B batch 1 4.08 -> 4.01 ms, Qwen3-30B-A3B 2.69 ->
// 2.60, Llama-3.1-8B 3.94 -> 3.88, and the throughput workload 9390 -> 9661 out tok/s (its decode
// attention 5.39 -> 4.88 s, ~0.92 of the bandwidth).
//
// Several splits are merged inside the same launch: every block writes its partial (max, sum,
// unnormalized output), and the last block to finish for a (sequence, KV head, row tile), found
// by an atomic counter, merges all splits' partials in split order. The second kernel this
// replaces (the shared combine of attention_decode.cu) cost a launch and a drain: with the
// block-table change, 14.7 -> 12.2 us at batch 1 / 4k keys and 46.1 -> 43.0 us at 32k (H200).
// The grid is sized for the longest context the launch may see (a decode graph passes the model's
// maximum), so each sequence uses only ceil(ctx / split_keys) of the splits (256 keys each by
// default) and the others' blocks leave at once; one split writes the output directly. Swept on
// the H200 (`ops perf`, keys per split 128 / 256 / 512 / 1024): Qwen3-30B-A3B heads at 192 keys
// 11.2 / 8.7 / 8.7 / 8.7 us, Qwen3-8B heads at 512 keys 9.0 / 11.2 / 13.5 / 13.5, at 4k 14.2 /
// 13.7 / 16.2 / 26.1: the merge chain costs about 4 us, a 16-key tile about 1 us per warp.
//
// Cluster form (devices with thread-block clusters, sm_90): at small batches the splits of a
// (sequence, KV head, row tile) are one cluster of up to 16 blocks, and they merge through
// distributed shared memory: each block leaves its partial in its own shared memory, and after a
// cluster barrier block r merges a 1/C share of the outputs from all C blocks' partials. No global
// partials, fence, counter or last block. H200, batch 1, cluster against split form: Qwen3-8B
// heads 6.4 / 11.2 us at 512 keys, 12.1 / 13.7 at 4k, 54.8 / 50.0 at 32k (the one loss: 128
// blocks keep less in flight than the split form's 264); Qwen3-30B-A3B heads at 192 keys 6.6 /
// 8.7. End to end, Qwen3-30B-A3B batch 1 3.17 against 3.24 ms at first; but in the eleventh
// session's decode graphs (same binary, PORTLLM_CLUSTERS=0 for the split form) it lost wherever
// the contexts are short: Qwen3-30B-A3B at 128-256 keys 3.03-3.05 against 2.94-2.96 ms,
// Llama-3.1-8B at 32-160 keys 4.36 against 4.16, and won only at 4k (Qwen3-8B 4.58-4.63 against
// 4.66-4.67). A cluster starts only when one GPC has room for all its blocks at once, while the
// previous kernels drain; a graph cannot pick the form by the step's context. So it is opt-in
// (PORTLLM_ATTN_CLUSTER=1), for long-context serving.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "backends/gpu/attention_common.cuh"
#include "backends/gpu/attention_decode_mma_policy.h"
#include "backends/gpu/env_switch.h"
#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/programmatic_launch.cuh"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/attention_decode_fp8_fragments.cuh"
#include "backends/gpu/attention_decode_heads_n.cuh"
#include "backends/gpu/attention_decode_merge.cuh"
#include "backends/gpu/cluster_sm90.cuh"
#include "backends/gpu/mma_sm80.cuh"
#endif

namespace portllm::gpu {

#if !defined(PORTLLM_GPU_MUSA)
namespace {
using namespace sm80;
constexpr int kRows = 16;  // query rows per block (the MMA's M): query heads of one KV head
constexpr int kKeys = 16;  // keys per tile
// Warps per block: 4, or 8 at small batches (small_batch_warps()). W stays a template parameter below.
constexpr int kWarps = 4;
constexpr float kLog2e = 1.4426950408889634f;
// Tile buffers per warp. Three stages (two tiles in flight per warp, two blocks per SM instead of
// three) measured no faster on the H200 at batch 1 with 4k or 32k keys (12.2 / 43.0 us either
// way), and two leave shared memory for three blocks per SM at large batches (registers
// permitting: kLargeMinBlocks). The cluster form too: three stages 12.3 / 55.8 us against
// 12.1 / 54.8, and four (one block per SM: a cluster of 16 then needs 16 free SMs of one GPC)
// 21.8 / 88.0.
// fp8 caches too. With the fragments built from the e4m3 tiles (kDirect), whose buffers are half
// the size, 3 or 4 stages, and a 4-blocks-per-SM form (Q's fragments in shared memory, 124
// registers), took batch 256 x 1k keys from 173.8 to 167-171 us but the throughput workload not
// at all (H200: 10689-10701 out tok/s for all; BENCHMARKS.md, twentieth session).
constexpr int kStages = 2;

// Arrival counters of the in-kernel split merge, one per (sequence, KV head, row tile) of a
// launch. A __device__ array is zero when the module loads on each device and has a fixed address,
// so graphs capture it and no launch needs a memset; the last block of a group wraps its counter
// back to 0 (atomicInc), so every launch finds them at 0. Launches of this kernel therefore must
// not overlap on one device: they all run on the device's main stream, and graphs replay one at a
// time on it. Splits > 1 only happen for grids below 4 blocks per compute unit (decode_splits),
// so the launcher falls back to the combine kernel only on devices with more than ~1000 of them.
constexpr int kMaxCounters = 4096;
__device__ unsigned int g_split_counters[kMaxCounters];

template <int D> constexpr int kLd = D + 8;  // padded smem row: 16-byte aligned, no ldmatrix bank conflicts
template <int D> constexpr size_t kTileElems = size_t(kKeys) * kLd<D>;
// An fp8 (e4m3) cache: tiles are copied as they are (rows of D bytes, half the bytes of a 16-bit
// tile). The MMAs run in f16 (TM in the kernel): e4m3 widens to f16 exactly, one conversion per
// pair on sm_89+ (widen_fp8x4_f16, mma_sm80.cuh; to bf16 it takes shifts and a multiply, and the
// throughput workload then ran no faster than with a bf16 cache: 9781 against 9729 out tok/s).
// At head dim 128 each lane builds its fragments from the e4m3 tile itself (kDirect, below). At
// other head dims the tile is widened to f16 in shared memory (widen_fp8_tile) for ldmatrix,
// whose rows are 16-bit values (fp8 ones exist from sm_100 on); that costs a store and a reload
// of every value, and the loop was then bound by its instruction latency per tile (ncu: ~610
// instructions per warp and tile against ~500 for bf16): H200, `ops perf --cold`, Qwen3-8B heads
// at batch 256 x 1k keys, widened 202.4 us, direct 173.8, bf16 261.4; the throughput workload
// 9889 out tok/s widened against 9413 bf16 (nineteenth session), direct 10701 against 9746
// (twentieth; BENCHMARKS.md).
template <class TC> constexpr bool kFp8 = sizeof(TC) == 1;
template <int D, class TC> constexpr int kStageLd = kFp8<TC> ? D : kLd<D>;  // a copied row, in TC values
template <int D, class TC> constexpr size_t kStageBytes = size_t(kKeys) * kStageLd<D, TC> * sizeof(TC);
// fp8 at head dim 128 (every dense model here): no widened copy; each lane builds its MMA
// fragments from the copied e4m3 tile with 32-bit words (attention_decode_fp8_fragments.cuh).
template <int D, class TC> constexpr bool kDirect = kFp8<TC> && D == 128;
// The forms the heads-as-N kernel (kHN, attention_decode_heads_n.cuh) has: e4m3 tiles at head dim
// 128 (kDirect) and 16-bit tiles at head dim 128.
template <int D, class TC> constexpr bool kHNForm = D == 128 && (kDirect<D, TC> || !kFp8<TC>);
template <int D, class TC>  // fp8 otherwise: (K, V) widened to f16
constexpr size_t kWideBytes = kFp8<TC> && !kDirect<D, TC> ? 2 * kTileElems<D> * 2 : 0;

// Q, then per warp kStages buffers of (K tile, V tile) as copied and, for fp8, one (K, V) pair
// widened. After the loop the whole region is reused: the warps' final outputs (f32), then the
// split merge's weights and partial outputs.
template <int D, class TC, int S = kStages>
constexpr size_t kWarpBytes = S * 2 * kStageBytes<D, TC> + kWideBytes<D, TC>;
// The kernel has static shared arrays, so its dynamic region starts dyn_smem_pad bytes in, on a
// 128-byte boundary (kDynSmemAlign bytes of room, mma_sm80.cuh). From the 16-mod-32 start it had,
// ncu counted every cp.async of an fp8 tile at 32 L2 sectors and 16 shared wavefronts against 16
// and 4. H200, one binary (BENCHMARKS.md, twenty-fifth session): Qwen3-8B heads, fp8 cache, 256 x
// 1k keys 175.3 -> 154.7 us, ragged 100..2042 keys 182.6 -> 152.9 us; the throughput workload
// 10,878 -> 11,392 out tok/s.
template <int D, int W = kWarps, class TC = gpu_bf16, int S = kStages>
constexpr size_t kSmemBytes = kDynSmemAlign + size_t(kRows) * kLd<D> * 2 + size_t(W) * kWarpBytes<D, TC, S>;

// kCluster: the splits of a (sequence, KV head, row tile) are one thread-block cluster (grid.z =
// p.splits = the cluster size) and merge through distributed shared memory (cluster_merge) instead
// of global partials, a fence, a counter and a last block's reads.
// kLarge: the form for batches of at least one (sequence, KV head) block per compute unit, where
// the tile loop's instructions, not its code's first fetch, are what a launch pays for. Fewer
// instructions per tile at the price of more code: Q carries the score scale (a converted Q, fp8
// caches), keys are masked on a split's last tile only, exponentials are ex2.approx.ftz (the
// flushed values are below 2^-126 of a row's maximum), offsets in power-of-two pages are masked
// instead of divided, and whole tiles are copied without row predicates. H200, one binary
// (BENCHMARKS.md, twenty-fourth session): Qwen3-8B heads at batch 256 x 1k keys 174.7 -> 172.9
// us with an fp8 cache, ragged contexts of 100..2042 keys 185.0 -> 182.2, the throughput workload
// 10,651 -> 10,707 out tok/s; at batch 1 the same form took Qwen3-8B from 4.05 to 4.07-4.08 ms
// (more code fetched once per launch), so small batches keep the compact form.
// kMinBlocks: blocks per compute unit the register allocation must allow (__launch_bounds__).
// The large-batch form with fragments from e4m3 tiles (kDirect) asks for kLargeMinBlocks = 3:
// left to itself ptxas gives it 178 registers, which fit only 2 blocks of 4 warps per SM, and its
// tile loop is bound by the latency of its chains, so the third block's warps are what hides it.
// Bounded, it takes 165 registers with no spills. H200, one binary (BENCHMARKS.md, thirty-seventh
// session; `ops perf --cold`, Qwen3-8B heads, fp8 cache): 256 x 1k keys 165.1 -> 153.9 us, 256
// ragged 100..2042 169.2 -> 153.8, 96 ragged 72.0 -> 68.1, 32 ragged 37.9 -> 34.3; the throughput
// workload 10,939-10,966 -> 11,149-11,162 out tok/s. Four blocks (128 registers, Q's fragments
// then read from shared memory each tile) took 256 x 1k to 146.0 us but ragged 256 only to 161.8
// and 96 to 75.0 (slower), and the workload not at all (11,016-11,021 against 11,019-11,026).
template <class T, class TC, int D, bool kCluster, int W, bool kLarge = false, int kMinBlocks = 1, int S = kStages,
          bool kHN = false>
__global__ void __launch_bounds__(W * 32, kMinBlocks) attn_decode_mma_kernel(AttnParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int LD = kLd<D>, VPR = D / 8;  // 16-byte vectors per row of Q
  // The cache as copied: 16-byte vectors of EV values, CVPR per row, rows SLD values apart.
  constexpr int EV = 16 / int(sizeof(TC)), CVPR = D / EV, SLD = kStageLd<D, TC>;
  constexpr int kThreads = W * 32;
  // kHN: the query heads are the MMAs' N dimension, 8 per block (attention_decode_heads_n.cuh).
  static_assert(!kHN || (kHNForm<D, TC> && !kCluster), "heads as N: head dim 128, split form");
  constexpr int kR = kHN ? heads_n::kHeads : kRows;  // query heads per block
  // The MMAs' dtype: q's, or f16 for an fp8 cache (one instruction widens a pair of e4m3 to f16
  // on sm_89+, against ~5 to bf16: widen_fp8x4_f16); Q is converted as it is staged, K and V widened.
  using TM = std::conditional_t<kFp8<TC>, gpu_half, T>;
  // The warps' outputs after the loop: rows of kORow floats (see o_col below).
  constexpr int kORow = kCluster ? D : kHN ? D + heads_n::kRowPad : kDirect<D, TC> ? D + 4 : D + 8;
  constexpr size_t kRegionBytes = kSmemBytes<D, W, TC, S> - kDynSmemAlign;  // from smem_raw on
  static_assert(size_t(W) * kR * kORow * 4 <= kRegionBytes, "warp outputs fit the shared memory");
  static_assert((size_t(kRows) * kMaxSplits + size_t(kRows) * D) * 4 <= kRegionBytes,
                "the split merge fits at least one split at a time");
  static_assert(kKeys * CVPR % 32 == 0, "a tile is a whole number of 16-byte copies per lane");
  const int row_tiles = (p.group + kR - 1) / kR;
  const int kh = blockIdx.x / row_tiles, rt = blockIdx.x % row_tiles;
  // Grid rows follow the work order where one is given (longest context first: blocks start in
  // grid order, so the long sequences' blocks start in the first waves instead of running on
  // alone at the end of a ragged batch).
  const int b = p.work_order ? p.work_order[blockIdx.y] : int(blockIdx.y), split = blockIdx.z;
  const int h0 = kh * p.group + rt * kR;
  const int ng = min(kR, p.group - rt * kR);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  // The step's metadata (lengths, block tables) is uploaded before the step, never written by a
  // kernel of it: read before the wait, while the previous kernel drains (programmatic_launch.cuh).
  const int ctx = p.seq_lens[b], qrow = p.qsl[b];
  // The splits this sequence uses (AttnParams::split_keys); the blocks of the others have nothing
  // to do, not even a partial to write: the merge covers splits [0, ns).
  // A cluster's blocks all stay: each takes part in the merge, with or without keys.
  const int ns = !kCluster && p.split_keys > 0 ? min(p.splits, max(1, (ctx + p.split_keys - 1) / p.split_keys))
                                               : p.splits;
  if (!kCluster && split >= ns) return;
  // Splits are a whole number of tiles, so every tile starts at a multiple of 16 keys: inside one
  // page whenever the page size is a multiple of 16 (one block-table entry per tile).
  const int per_split = (ctx + ns - 1) / ns;
  const int chunk = (per_split + kKeys - 1) / kKeys * kKeys;
  const int start = min(ctx, split * chunk), end = min(ctx, start + chunk);
  const int n_tiles = (end - start + kKeys - 1) / kKeys;
  // This warp's tiles are warp + W * j, j = 0 .. my_tiles - 1.
  const int my_tiles = n_tiles > warp ? (n_tiles - warp + W - 1) / W : 0;

  extern __shared__ __align__(16) unsigned char smem_base[];
  unsigned char* const smem_raw = smem_base + dyn_smem_pad(smem_base);
  TM* sQ = reinterpret_cast<TM*>(smem_raw);
  unsigned char* s_warp = smem_raw + size_t(kRows) * LD * 2 + size_t(warp) * kWarpBytes<D, TC, S>;
  // Buffer buf's K tile as copied (its V tile follows it), and for fp8 the widened (K, V) pair.
  auto staged = [&](int buf) { return reinterpret_cast<TC*>(s_warp + size_t(buf) * 2 * kStageBytes<D, TC>); };
  TM* s_wide = reinterpret_cast<TM*>(s_warp + S * 2 * kStageBytes<D, TC>);
  __shared__ float s_m[W][kRows], s_l[W][kRows], s_L[kRows];
  __shared__ float s_bm[kRows], s_bl[kRows];  // kCluster: this block's (max, sum) per row
  __shared__ unsigned s_last;
  const T* q = static_cast<const T*>(p.q);
  const TC* kc = static_cast<const TC*>(p.k_cache);
  const TC* vc = static_cast<const TC*>(p.v_cache);

  // Lane i holds the block-table entry of local tile 32 * bt_batch + i (bt_cur) and of the next
  // 32 tiles (bt_next, loaded one batch ahead): one round trip per 32 tiles, off the copy path.
  const bool one_page = p.page % kKeys == 0;
  auto bt_entry = [&](int j) {
    if (!one_page || j >= my_tiles) return 0;  // no read past the sequence's table entries
    return p.block_tables[int64_t(b) * p.bt_s0 + (start + (warp + j * W) * kKeys) / p.page];
  };
  int bt_batch = 0, bt_cur = bt_entry(lane), bt_next = bt_entry(32 + lane);
  // The page holding local tile j (one_page only; j = 0, 1, 2, ... in order): a shuffle from the
  // lane holding its entry, the next 32 entries loaded as a batch is used up.
  auto page_of_tile = [&](int j) {
    if ((j >> 5) != bt_batch) {  // warp-uniform
      bt_batch = j >> 5;
      bt_cur = bt_next;
      bt_next = bt_entry(32 * (bt_batch + 1) + lane);
    }
    return __shfl_sync(0xffffffffu, bt_cur, j & 31);
  };

  // Starts the copy of local tile j into buffer buf; rows past the split are zero-filled (their
  // scores are masked, and zero V rows keep P V finite). Called with j = 0, 1, 2, ... in order.
  auto issue = [&](int j, int buf) {
    TC* sK = staged(buf);
    TC* sV = sK + kKeys * SLD;
    const int kt = start + (warp + j * W) * kKeys;
    if (one_page) {
      const int blk = page_of_tile(j);
      const int in_page = kLarge && p.page_pow2 ? kt & (p.page - 1) : kt % p.page;
      // Lane l copies vector l % CVPR of rows l / CVPR, l / CVPR + 32 / CVPR, ...: one pointer per
      // operand, stepped by a fixed stride (a few instructions per copy; issue() is inlined three
      // times, so its size is the kernel's).
      constexpr int kRowStep = 32 / CVPR;
      const int r0 = lane / CVPR, c = lane % CVPR;
      const TC* ks = kc + int64_t(blk) * p.kc_s0 + int64_t(in_page + r0) * p.kc_s1 + int64_t(kh) * p.kc_s2 + c * EV;
      const TC* vs = vc + int64_t(blk) * p.vc_s0 + int64_t(in_page + r0) * p.vc_s1 + int64_t(kh) * p.vc_s2 + c * EV;
      const int64_t kstep = kRowStep * p.kc_s1, vstep = kRowStep * p.vc_s1;
      // kLarge, a whole tile: the loop below without its row predicates. Written out: folding both
      // into one lambda with a compile-time flag changed the address arithmetic of every instance
      // (PTX), the batch-1 one included, whose code size its latency follows.
      if (kLarge && kt + kKeys <= end) {
#pragma unroll
        for (int it = 0; it < kKeys / kRowStep; ++it, ks += kstep, vs += vstep) {
          const int r = it * kRowStep + r0;
          const int cd = kDirect<D, TC> ? fp8_chunk(r, c) : c;
          cp_async16(sK + r * SLD + cd * EV, ks, 16);
          cp_async16(sV + r * SLD + cd * EV, vs, 16);
        }
        return;
      }
#pragma unroll
      for (int it = 0; it < kKeys / kRowStep; ++it, ks += kstep, vs += vstep) {
        const int r = it * kRowStep + r0;
        const bool ok = kt + r < end;
        const int cd = kDirect<D, TC> ? fp8_chunk(r, c) : c;
        cp_async16(sK + r * SLD + cd * EV, ok ? ks : kc, ok ? 16 : 0);
        cp_async16(sV + r * SLD + cd * EV, ok ? vs : vc, ok ? 16 : 0);
      }
      return;
    }
    // Pages that are not a multiple of 16 keys: a block-table lookup per row, in a rolled loop so
    // that its code (a division per row) stays out of the common path's instruction stream.
#pragma unroll 1
    for (int it = 0; it < kKeys * CVPR / 32; ++it) {
      const int i = it * 32 + lane, r = i / CVPR, c = i % CVPR;
      const bool ok = kt + r < end;
      int64_t ko = 0, vo = 0;
      if (ok) {
        ko = kv_offset(p, b, kt + r, p.kc_s0, p.kc_s1, p.kc_s2, kh);
        vo = kv_offset(p, b, kt + r, p.vc_s0, p.vc_s1, p.vc_s2, kh);
      }
      const int cd = kDirect<D, TC> ? fp8_chunk(r, c) : c;
      cp_async16(sK + r * SLD + cd * EV, kc + ko + c * EV, ok ? 16 : 0);
      cp_async16(sV + r * SLD + cd * EV, vc + vo + c * EV, ok ? 16 : 0);
    }
  };

  float o[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // rows lane/4 and lane/4 + 8
  const float sl2 = p.scale * kLog2e;
  // kLarge with a converted Q: Q carries the scale (S comes out in log2 units).
  constexpr bool kQScaled = kLarge && !std::is_same_v<TM, T>;
  const float s_scale = kQScaled ? 1.f : sl2;
  auto ex2 = [](float x) {
    if constexpr (kLarge) return ex2_ftz(x);
    else return exp2f(x);
  };

  // A warp's first tile is copied before the wait when it holds only keys of earlier steps: the
  // previous kernel writes this step's K/V row (position ctx - 1) and q, and the kernels before it
  // have finished once it runs (programmatic_launch.cuh), so older cache rows are settled. The
  // copy overlaps the previous kernel's tail instead of following it.
  // So is its second tile (one per buffer) when it holds only such keys: Qwen3-30B-A3B batch 1
  // 2.93-2.95 -> 2.88 ms, Qwen3-8B at 128 keys 4.37 -> 4.32 (H200, one binary, with the second
  // tile's copy moved ahead of the Q barrier below; that move alone: 2.89 / 4.34).
  int n_early = 0;
  while (p.early_tiles && n_early < S && n_early < my_tiles &&
         min(end, start + (warp + n_early * W) * kKeys + kKeys) <= ctx - 1)
    ++n_early;
  for (int j = 0; j < n_early; ++j) issue(j, j);
  cp_async_commit();
  gpu_wait_for_predecessor();  // launched programmatically: q and this step's K/V row were just written
  if (ctx <= p.early_trigger_keys) gpu_allow_successor();  // else at exit: see early_trigger_keys()

  // Q (rows past the group zero-filled: zero queries, never written out), then each warp's first
  // S tiles, one per buffer (those that did not go early), so the Q barrier overlaps the
  // first K/V reads and the second tile's copy does not wait for Q's round trip. One commit group
  // per tile, possibly empty, so "all but the newest S - 1 groups" is always one tile (the
  // early group and Q's count as older ones).
  // Q to be converted (bf16 q, fp8 cache) is loaded to registers and stored after the tiles'
  // copies are issued, so they do not wait for its round trip; its commit group stays, empty.
  if constexpr (std::is_same_v<TM, T>)
    for (int i = tid; i < kR * VPR; i += kThreads) {
      const int r = i / VPR, c = i % VPR;
      const int64_t off = r < ng ? int64_t(qrow) * p.q_s0 + int64_t(h0 + r) * p.q_s1 + c * 8 : 0;
      cp_async16(sQ + r * LD + c * 8, q + off, r < ng ? 16 : 0);
    }
  cp_async_commit();
#pragma unroll 1  // one copy of issue()'s code for both buffers (code size: see the top)
  for (int j = 0; j < S; ++j) {
    if (j < my_tiles && j >= n_early) issue(j, j);
    cp_async_commit();
  }
  if constexpr (!std::is_same_v<TM, T>)
    for (int i = tid; i < kR * VPR; i += kThreads) {
      const int r = i / VPR, c = i % VPR;
      const int64_t off = r < ng ? int64_t(qrow) * p.q_s0 + int64_t(h0 + r) * p.q_s1 + c * 8 : 0;
      const uint4 v = r < ng ? *reinterpret_cast<const uint4*>(q + off) : make_uint4(0u, 0u, 0u, 0u);
      *reinterpret_cast<uint4*>(sQ + r * LD + c * 8) = bf16x8_to_f16x8_satfinite(v, kQScaled ? sl2 : 1.f);
    }
  cp_async_wait<S>();  // this thread's Q copies and early tiles (not the first-round ones)
  __syncthreads();           // everyone's Q

  // Q's A fragments stay in registers at head dims up to 128 (32 registers), instead of 8
  // ldmatrix per tile: the widened-fp8 loop was bound by instruction latency (ncu, H200, Qwen3-8B
  // heads at batch 256 x 1k keys: ~500-610 instructions per warp and 16-key tile, 3 warps per
  // scheduler, short-scoreboard stalls on shared memory the largest share). kDirect builds them
  // with its head-dim map (attention_decode_fp8_fragments.cuh).
  constexpr bool kQInRegs = D <= 128;
  uint32_t qa[kQInRegs && !kHN ? D / 16 : 1][4];
  uint32_t qb[kHN ? D / 16 : 1][2];  // kHN: Q^T's B fragments (kDirect: with its head-dim map)
  const int g = lane / 4, t = lane % 4;  // a fragment's row (or column) and k pair
  if constexpr (kHN) {
    heads_n::q_fragments<D, LD, kDirect<D, TC>>(sQ, lane, qb);
  } else if constexpr (kDirect<D, TC>) {  // k-step s's k slots of lane t: dims 32t + 4s + {0, 1, 2, 3}
#pragma unroll
    for (int s = 0; s < D / 16; ++s) {
      const TM* q0 = sQ + g * LD + (D / 4) * t + 4 * s;
      qa[s][0] = *reinterpret_cast<const uint32_t*>(q0);
      qa[s][1] = *reinterpret_cast<const uint32_t*>(q0 + 8 * LD);
      qa[s][2] = *reinterpret_cast<const uint32_t*>(q0 + 2);
      qa[s][3] = *reinterpret_cast<const uint32_t*>(q0 + 8 * LD + 2);
    }
  } else if constexpr (kQInRegs) {
#pragma unroll
    for (int kk = 0; kk < D; kk += 16) ldsm_x4(qa[kk / 16], sQ + (lane % 16) * LD + kk + (lane / 16) * 8);
  }

  // One 16-key tile of the row form: the query heads as the MMAs' M rows (S = Q K^T, O += P V).
  auto tile_rows = [&](const TM* sK, const TM* sV, const uint8_t* tK, const uint8_t* tV, int kt) {
    float s[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
    if constexpr (kDirect<D, TC>) {
      // Column g of n-tile nt is key row 4 (g / 2) + 2 nt + g % 2; its bytes 32t .. 32t + 31 are
      // this lane's k slots of all 8 k-steps (4 per 32-bit word).
      uint4 kw[2][2];
      load_k_words<D>(tK, g, t, kw);
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          uint32_t b0, b1;
          widen_fp8x4_f16(word_of(kw[nt][ks / 4], ks % 4), b0, b1);
          Mma<TM>::run(s[nt], qa[ks], b0, b1);
        }
    } else {
#pragma unroll
      for (int kk = 0; kk < D; kk += 16) {
        uint32_t a[4], kb[4];
        if constexpr (kQInRegs) {
#pragma unroll
          for (int i = 0; i < 4; ++i) a[i] = qa[kk / 16][i];
        } else {
          ldsm_x4(a, sQ + (lane % 16) * LD + kk + (lane / 16) * 8);
        }
        ldsm_x4(kb, sK + (lane % 8 + (lane / 16) * 8) * LD + kk + ((lane / 8) % 2) * 8);
        Mma<TM>::run(s[0], a, kb[0], kb[1]);
        Mma<TM>::run(s[1], a, kb[2], kb[3]);
      }
    }
    float mx0 = -INFINITY, mx1 = -INFINITY;
    if (!kLarge || kt + kKeys > end) {  // kLarge: only a split's last tile has keys past its end
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int kpos = kt + (kDirect<D, TC> ? 4 * t + 2 * nt : nt * 8 + 2 * t) + (e & 1);
          s[nt][e] = kpos < end ? s[nt][e] * s_scale : -INFINITY;
        }
    } else if (!kQScaled) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nt][e] *= s_scale;
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (e < 2) mx0 = fmaxf(mx0, s[nt][e]);
        else mx1 = fmaxf(mx1, s[nt][e]);
      }
    mx0 = quad_max(mx0);
    mx1 = quad_max(mx1);
    const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);  // finite: key kt is valid
    const float alpha0 = ex2(m0 - mn0), alpha1 = ex2(m1 - mn1);
    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      s[nt][0] = ex2(s[nt][0] - mn0);
      s[nt][1] = ex2(s[nt][1] - mn0);
      s[nt][2] = ex2(s[nt][2] - mn1);
      s[nt][3] = ex2(s[nt][3] - mn1);
      sum0 += s[nt][0] + s[nt][1];
      sum1 += s[nt][2] + s[nt][3];
    }
    l0 = l0 * alpha0 + sum0;  // per-thread partial sums; the quad is reduced once at the end
    l1 = l1 * alpha1 + sum1;
    // The output is rescaled only when some row's maximum moved: after the first tiles it rarely
    // does, and alpha is then exactly 1 (64 multiplies per tile saved at D = 128).
    if (__any_sync(0xffffffffu, mn0 != m0 || mn1 != m1)) {
#pragma unroll
      for (int i = 0; i < D / 8; ++i) {
        o[i][0] *= alpha0;
        o[i][1] *= alpha0;
        o[i][2] *= alpha1;
        o[i][3] *= alpha1;
      }
    }
    m0 = mn0;
    m1 = mn1;
    uint32_t a[4];  // P's accumulator fragments are the A fragments of P V
    a[0] = Mma<TM>::pack(s[0][0], s[0][1]);
    a[1] = Mma<TM>::pack(s[0][2], s[0][3]);
    a[2] = Mma<TM>::pack(s[1][0], s[1][1]);
    a[3] = Mma<TM>::pack(s[1][2], s[1][3]);
    if constexpr (kDirect<D, TC>) {
      // Key rows 4t .. 4t + 3, bytes 16g .. 16g + 15: dim 16g + j of n-tile j for each key. Word
      // c holds n-tiles 4c .. 4c + 3; a byte permute pairs two keys' values of two dims.
      uint4 vw[4];
      load_v_words<D>(tV, g, t, vw);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const uint32_t r0 = word_of(vw[0], c), r1 = word_of(vw[1], c), r2 = word_of(vw[2], c), r3 = word_of(vw[3], c);
        uint32_t b0[4], b1[4];  // n-tile 4c + i's fragment: keys (4t, 4t + 1), (4t + 2, 4t + 3)
        widen_fp8x4_f16(__byte_perm(r0, r1, 0x5140), b0[0], b0[1]);
        widen_fp8x4_f16(__byte_perm(r0, r1, 0x7362), b0[2], b0[3]);
        widen_fp8x4_f16(__byte_perm(r2, r3, 0x5140), b1[0], b1[1]);
        widen_fp8x4_f16(__byte_perm(r2, r3, 0x7362), b1[2], b1[3]);
#pragma unroll
        for (int i = 0; i < 4; ++i) Mma<TM>::run(o[4 * c + i], a, b0[i], b1[i]);
      }
    } else {
#pragma unroll
      for (int d2 = 0; d2 < D / 16; ++d2) {
        uint32_t vb[4];
        ldsm_x4_trans(vb, sV + (lane % 8 + ((lane / 8) % 2) * 8) * LD + d2 * 16 + (lane / 16) * 8);
        Mma<TM>::run(o[2 * d2], a, vb[0], vb[1]);
        Mma<TM>::run(o[2 * d2 + 1], a, vb[2], vb[3]);
      }
    }
  };

  // The trip count depends on the warp only: every lane runs every iteration (the softmax
  // reductions are full-warp shuffles).
  for (int j = 0, buf = 0; j < my_tiles; ++j, buf = buf + 1 == S ? 0 : buf + 1) {
    // From j = 1 the buffer freed by the last iteration takes tile j + S - 1 (the prologue
    // filled every buffer, so j = 0 adds no group: the newest S - 1 then are tiles 1 ..).
    if (j > 0) {
      if (j + S - 1 < my_tiles) issue(j + S - 1, buf == 0 ? S - 1 : buf - 1);
      cp_async_commit();
    }
    cp_async_wait<S - 1>();  // tile j has landed
    __syncwarp();                  // tile j, copied by all lanes, is visible to the whole warp
    const TM* sK = nullptr;
    if constexpr (kFp8<TC> && !kDirect<D, TC>) {
      widen_fp8_tile<D, 2 * kKeys, 32>(s_wide, reinterpret_cast<const uint8_t*>(staged(buf)), lane);
      __syncwarp();  // the widened pair, written by all lanes, is visible to the whole warp
      sK = s_wide;
    } else if constexpr (!kFp8<TC>) {
      sK = staged(buf);
    }
    const TM* sV = kDirect<D, TC> ? nullptr : sK + kTileElems<D>;
    const uint8_t* tK = reinterpret_cast<const uint8_t*>(staged(buf));  // kDirect: the e4m3 tiles
    const uint8_t* tV = tK + kKeys * D;
    const int kt = start + (warp + j * W) * kKeys;
    if constexpr (kHN)
      heads_n::tile<D, LD, TM, kDirect<D, TC>, kLarge, kQScaled>(sK, sV, tK, tV, kt, end, s_scale, lane, qb, o, m0, m1,
                                                                 l0, l1);
    else
      tile_rows(sK, sV, tK, tV, kt);
    __syncwarp();  // every lane is done with buf before a later iteration refills it
  }
  if constexpr (kHN) {
    l0 = column_sum(l0);
    l1 = column_sum(l1);
  } else {
    l0 = quad_sum(l0);
    l1 = quad_sum(l1);
  }

  // Merge the warps: (max, sum) per row and the unnormalized outputs through shared memory (the
  // Q and K/V buffers are free once every warp has left its loop). Rows past the group are
  // padding and skipped.
  cp_async_wait<0>();
  __syncthreads();
  float* s_o = reinterpret_cast<float*>(smem_raw);  // [W][kRows][kORow]
  const int r0 = lane / 4;
  if (kHN && lane < 4) {  // heads 2t, 2t + 1
    s_m[warp][2 * lane] = m0;
    s_l[warp][2 * lane] = l0;
    s_m[warp][2 * lane + 1] = m1;
    s_l[warp][2 * lane + 1] = l1;
  } else if (!kHN && lane % 4 == 0) {
    s_m[warp][r0] = m0;
    s_l[warp][r0] = l0;
    s_m[warp][r0 + 8] = m1;
    s_l[warp][r0 + 8] = l1;
  }
  // Output n-tile i's columns (2t, 2t + 1): dims i * 8 + 2t + {0, 1}, or, kDirect, 16 (2t) + i and
  // 16 (2t + 1) + i.
  // Rows of kORow floats, dim d of a row at column o_col(d): padding that keeps the fragment stores
  // here and the merge's row reads below off each other's banks (unpadded, each kDirect store put
  // all 16 lanes on one bank, and the others 4). The cluster form's merge reads them unpadded.
  // kHN: heads_n::out_col.
  auto o_col = [](int d) {
    return kHN ? heads_n::out_col(d) : kDirect<D, TC> && !kCluster ? d + (d >> 5) : d;
  };
  constexpr int kNext = kDirect<D, TC> ? 16 : 1;  // the dim of column 2t + 1 after that of 2t
  if constexpr (kHN) heads_n::store_outputs<D, kDirect<D, TC>>(o, s_o + size_t(warp) * kR * kORow, kORow, ng, lane);
#pragma unroll
  for (int i = 0; i < (kHN ? 0 : D / 8); ++i) {
    const int d = kDirect<D, TC> ? 32 * (lane % 4) + i : i * 8 + (lane % 4) * 2;
    float* row0 = s_o + (size_t(warp) * kRows + r0) * kORow;
    float* row1 = row0 + 8 * kORow;
    if (r0 < ng) {
      row0[o_col(d)] = o[i][0];
      row0[o_col(d + kNext)] = o[i][1];
    }
    if (r0 + 8 < ng) {
      row1[o_col(d)] = o[i][2];
      row1[o_col(d + kNext)] = o[i][3];
    }
  }
  __syncthreads();
  // Each row's merged (max, sum) and its warps' weights exp2(m_w - M), once per row into shared
  // memory (s_m is overwritten with the weights): computed per output instead, each thread
  // repeated them for every one of its outputs, and ncu put a third of the batch-1 kernel's stall
  // samples there (Qwen3-30B-A3B batch 1, 2.58 -> 2.53 ms). The sums run in the same order.
  if (tid < ng) {
    const int g = tid;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < W; ++w)
      if (s_l[w][g] > 0.f) M = fmaxf(M, s_m[w][g]);
    float L = 0.f;
#pragma unroll
    for (int w = 0; w < W; ++w)
      if (s_l[w][g] > 0.f) {
        const float e = exp2f(s_m[w][g] - M);
        L += s_l[w][g] * e;
        s_m[w][g] = e;
      }
    s_bm[g] = M;
    s_bl[g] = L;
  }
  __syncthreads();
  for (int idx = tid; idx < ng * D; idx += kThreads) {
    const int g = idx / D, d = idx % D, h = h0 + g;
    const float M = s_bm[g], L = s_bl[g];
    float acc = 0.f;
#pragma unroll
    for (int w = 0; w < W; ++w)
      if (s_l[w][g] > 0.f) acc += s_o[(size_t(w) * kR + g) * kORow + o_col(d)] * s_m[w][g];
    if constexpr (kCluster) {
      s_o[size_t(g) * D + d] = acc;  // warp 0's slot of (g, d), read above by this thread only
    } else if (ns == 1) {
      T* orow = static_cast<T*>(p.out) + int64_t(qrow) * p.o_s0 + int64_t(h) * p.o_s1;
      orow[d] = cvt<T>(L > 0.f ? acc / L : 0.f);
    } else {
      const int64_t row = (int64_t(b) * p.Hq + h) * p.splits + split;
      p.part_o[row * D + d] = acc;
      if (d == 0) {
        p.part_ml[row * 2] = M;
        p.part_ml[row * 2 + 1] = L;
      }
    }
  }
  if constexpr (kCluster) {
    cluster_merge<T, D, W>(p, s_o, s_bm, s_bl, qrow, h0, ng);
    return;
  }
  if (ns == 1 || !p.merge_in_kernel) return;

  // Split merge: the last block of this (sequence, KV head, row tile) to get here merges. The
  // fence before the count makes this block's partial visible to whichever block merges; the
  // fence after it orders the merging block's reads after every other block's count.
  __threadfence();
  __syncthreads();  // every thread's partial is written and fenced; s_o is free again
  if (tid == 0) {
    const unsigned last = unsigned(ns - 1);
    s_last = atomicInc(&g_split_counters[blockIdx.y * gridDim.x + blockIdx.x], last) == last;  // wraps to 0
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  merge_splits<T, D, W, kR, kRegionBytes>(p, smem_raw, s_L, b, qrow, h0, ng, ns);
#endif
}

dim3 grid_of(const AttnParams& p, int B, int rows = kRows) {
  const int row_tiles = (p.group + rows - 1) / rows;
  return dim3{unsigned(p.Hkv * row_tiles), unsigned(B), unsigned(p.splits)};
}

template <class T, class TC, int D, int W, bool kLarge, int S, bool kHN = false>
void launch_form(const AttnParams& p, int B, Stream& s) {
  // The heads-as-N form's large instance is bounded to 4 blocks per SM (128 registers; it takes 130
  // unbounded): 4 fit where its tile buffers leave the shared memory for them (2 or 3 per warp).
  constexpr int kMinBlocks = !kLarge || !kDirect<D, TC> ? 1 : kHN ? 4 : kLargeMinBlocks;
  auto* kernel = attn_decode_mma_kernel<T, TC, D, false, W, kLarge, kMinBlocks, S, kHN>;
  constexpr size_t smem = kSmemBytes<D, W, TC, S>;
  (void)gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  launch_programmatic(s, kernel, grid_of(p, B, kHN ? heads_n::kHeads : kRows), dim3(W * 32), smem, p);
}

// hn: the heads-as-N form (kHNForm caches with up to 8 query heads per KV head only).
template <class T, class TC, int D, int W, bool kHN = false>
void launch(const AttnParams& p, int B, bool large, int stages, bool hn, Stream& s) {
  if constexpr (kHNForm<D, TC> && !kHN) {
    if (hn) return launch<T, TC, D, W, true>(p, B, large, stages, hn, s);
  }
  if constexpr (W == kWarps) {  // 8-warp blocks are taken at small batches only
    if (large) {
      if constexpr (kDirect<D, TC>) {
        if (stages == 3) return launch_form<T, TC, D, W, true, 3, kHN>(p, B, s);
        if (stages == 4) return launch_form<T, TC, D, W, true, 4, kHN>(p, B, s);
      }
      return launch_form<T, TC, D, W, true, kStages, kHN>(p, B, s);
    }
  }
  launch_form<T, TC, D, W, false, kStages, kHN>(p, B, s);
}

// The cluster form with p.splits blocks per cluster, if the device fits clusters of that size of
// this kernel (asked once per size); false: launch the split-and-merge form instead.
template <class T, class TC, int D>
bool launch_cluster(const AttnParams& p, int B, Stream& s) {
  static std::atomic<int> fits[kMaxCluster + 1] = {};  // 0 unknown, 1 yes, 2 no
  auto* kernel = attn_decode_mma_kernel<T, TC, D, true, kWarps>;
  constexpr size_t smem = kSmemBytes<D, kWarps, TC>;
  const int C = p.splits;
  if (fits[C].load() == 0) {
    (void)gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    fits[C] = gpuMaxActiveClusters(kernel, grid_of(p, B), dim3(kWarps * 32), smem, unsigned(C)) > 0 ? 1 : 2;
  }
  if (fits[C].load() != 1) return false;
  (void)gpuLaunchClustered(kernel, grid_of(p, B), dim3(kWarps * 32), smem, native_stream(s), unsigned(C),
                           caps_of(s).programmatic_launch, p);  // an error surfaces in check_launch
  return true;
}

// Blocks per cluster for the cluster form (0: the split-and-merge form): where it is asked for
// (PORTLLM_ATTN_CLUSTER=1, read once), the device has clusters and the split form would split, the
// largest power of two up to kMaxCluster that keeps the grid within about two blocks per compute
// unit, with at least one 16-key tile per block at the longest context. Measured on the H200: see
// the top of the file.
int cluster_size(const AttentionArgs& a, int groups, int splits, const DeviceCaps& caps) {
  static const bool wanted = env_switch("PORTLLM_ATTN_CLUSTER", {"0", "1"}, 0) == 1;
  if (!wanted || caps.max_cluster_blocks < 2 || splits < 2) return 0;
  int c = std::min(kMaxCluster, caps.max_cluster_blocks);
  while (c > 2 && (int64_t(groups) * c > 2 * int64_t(caps.num_compute_units) || c * kKeys > std::max(1, a.max_seq_len)))
    c /= 2;
  return int64_t(groups) * c <= 2 * int64_t(caps.num_compute_units) ? c : 0;
}

void attn_decode_mma(const AttentionArgs& a, Stream& s) {
  AttnParams p = params_of(a);
  const int B = int(a.seq_lens.size(0));
  if (B == 0) return;
  // 16-byte copies of q and cache rows: fall back if a view breaks that.
  const bool fp8 = a.k_cache.dtype == DType::F8E4M3;
  const bool ok = attention_views_vec16(p, fp8 ? 16 : 8);
  if (!ok) return attn_decode_portable(a, s);
  // At least two tiles per warp and split (one in flight while the other is computed).
  // With 4 warps, about two blocks per compute unit (up to three fit; split_blocks_per_cu).
  // Measured at batch 1 with Qwen3-8B heads on the H200 (two per compute unit: 12.2 us at 4k
  // keys, 43.0 at 32k): three per compute unit is 50 splits, 400 blocks for 396 slots, and the
  // second wave's 4 blocks made it 14.4 / 57.9 us; one per compute unit (17 splits) 13.0 / 53.3.
  const int blocks = B * p.Hkv * ((p.group + kRows - 1) / kRows);
  const DeviceCaps& caps = caps_of(s);
  const bool small_batch = blocks < caps.num_compute_units;
  if (!follow_work_order(blocks, caps)) p.work_order = nullptr;
  // 8-warp blocks (small_batch_warps) fit once per compute unit, so they are taken where at least
  // two of them per (sequence, KV head) fit in one wave (a block then holds a 256-key split's tiles
  // in flight at once), and no more of them than compute units: a 17th split of Qwen3-8B's 8 KV
  // heads (136 blocks for 132) put 4 blocks in a second wave, 63.4 against 43.8 us at 32k keys
  // (H200, `ops perf --cold`). With 8 KV heads that is batches up to 8; at 16 a sequence would
  // get one 8-warp split against three 4-warp ones.
  const size_t smem_cap = std::max(caps.shared_mem_per_block_optin, caps.shared_mem_per_block);
  const int W = 2 * blocks <= caps.num_compute_units && p.Dk <= 128 &&
                        (fp8 ? kSmemBytes<128, 8, gpu_fp8> : kSmemBytes<128, 8>) <= smem_cap
                    ? small_batch_warps()
                    : kWarps;
  p.splits = W == 8 ? std::min(decode_splits(a, blocks, 2 * W * kKeys, caps, 1), caps.num_compute_units / blocks)
                    : decode_splits(a, blocks, 2 * W * kKeys, caps, split_blocks_per_cu());
  // Early tiles at small batches (fewer (sequence, KV head) blocks than compute units, the same
  // test as the splits' above): there the first tile's latency is on the step's critical path
  // (Qwen3-8B at 4k 4.80 -> 4.76 ms). With them at every batch the throughput workload measured
  // 9255 against 9288 out tok/s, so large batches copy after the wait.
  p.early_tiles = early_tiles() && small_batch;
  // The successor's launch at exit at small batches only: the throughput workload (Qwen3-8B, up
  // to 256 sequences of 100-2048 keys) measured 9390 out tok/s with it against 9452 without.
  p.early_trigger_keys = small_batch ? early_trigger_keys() : std::numeric_limits<int>::max();
  if (const int c = W == kWarps ? cluster_size(a, blocks, p.splits, caps) : 0) {
    AttnParams pc = p;
    pc.splits = c;
    pc.merge_in_kernel = false;
    auto go = [&](auto tag, auto ctag) {
      using T = typename decltype(tag)::type;
      using TC = typename decltype(ctag)::type;
      switch (p.Dk) {
        case 64: return launch_cluster<T, TC, 64>(pc, B, s);
        case 128: return launch_cluster<T, TC, 128>(pc, B, s);
        default: return launch_cluster<T, TC, 256>(pc, B, s);
      }
    };
    if (dispatch_mma_attention(a, go)) return check_launch("attn_decode_mma");
  }
  p.merge_in_kernel = p.splits > 1 && blocks <= kMaxCounters;
  p.split_keys = p.merge_in_kernel ? split_keys() : 0;
  const std::shared_ptr<void> ws = decode_partials(p, B, s);
  const gpuStream_t st = native_stream(s);
  const int stages = large_stages(blocks, caps);
  const bool hn = p.Dk == 128 && p.group <= 8 && heads_as_n(fp8);
  auto go = [&](auto tag, auto ctag) {
    using T = typename decltype(tag)::type;
    using TC = typename decltype(ctag)::type;
    switch (p.Dk) {
      case 64:
        return W == 8 ? launch<T, TC, 64, 8>(p, B, false, kStages, false, s)
                      : launch<T, TC, 64, kWarps>(p, B, !small_batch, stages, false, s);
      case 128:
        return W == 8 ? launch<T, TC, 128, 8>(p, B, false, kStages, hn, s)
                      : launch<T, TC, 128, kWarps>(p, B, !small_batch, stages, hn, s);
      default: return launch<T, TC, 256, kWarps>(p, B, !small_batch, stages, false, s);
    }
  };
  dispatch_mma_attention(a, go);
  if (!p.merge_in_kernel) attn_decode_combine(p, B, a.q.dtype, st);  // no-op for one split
  check_launch("attn_decode_mma");
}

// Shared memory of the 4-warp form (8 warps are taken only where they fit).
size_t smem_need(int64_t D, bool fp8) {
  if (fp8)
    return D == 64 ? kSmemBytes<64, kWarps, gpu_fp8>
                   : D == 128 ? kSmemBytes<128, kWarps, gpu_fp8> : kSmemBytes<256, kWarps, gpu_fp8>;
  return D == 64 ? kSmemBytes<64> : D == 128 ? kSmemBytes<128> : kSmemBytes<256>;
}

bool supports(const OpDesc& d, const DeviceCaps& c) { return mma_attention_supports(d, c, smem_need); }
}  // namespace

void register_attention_decode_mma_kernels() {
  register_kernel<AttentionArgs>(Op::ATTN_DECODE, DeviceKind::CUDA, "gpu.attn_decode_mma_sm80", 20, supports,
                                 attn_decode_mma);
}
#else
void register_attention_decode_mma_kernels() {}  // NVIDIA-only fast path; MUSA uses the portable sibling
#endif

}  // namespace portllm::gpu
