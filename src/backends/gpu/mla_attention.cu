// MLA_ATTENTION: absorbed multi-head latent attention over the paged latent cache (DeepSeek
// V2/V3). Semantics: ops/op_args_moe.h (MlaAttentionArgs); oracle: ops/ref/mla_ref.cpp.
//
// Every query head attends to the same single latent KV head (c | k_pe, Dc + Dr values per
// token), so a block serves R query "rows" at once: rows are (token, head) pairs of one
// sequence, flattened as token * H + head, so a decode block holds R heads of one token and a
// prefill block R heads of one token or several tokens of few heads. Each latent tile of BK keys
// is gathered through the block table into shared memory once (f32, row stride padded to an odd
// count against bank conflicts) and serves all R rows: that reuse across heads is the point of
// MLA. Caches of any float dtype or fp8 (e4m3, --kv-dtype fp8: this kernel is the GPU's only one
// for those; the tensor-core decode in mla_attention_mma.cu takes 16-bit caches). Per tile:
//   1. scores: one thread per (row, key) pair: s = q_row . k_key over Dc + Dr (q pre-scaled),
//      -inf past the row's causal limit (position ctx - q_len + token) or the block's key range;
//   2. online softmax: one warp per row updates the running max and sum and turns the tile's
//      scores into probabilities (BK <= kWarpSize, lane j holds key j);
//   3. output: each thread owns R * Dc / 256 output values (<= 32, in registers), rescales them
//      by the row's alpha and adds sum_j p[row, j] * c_j[d].
// Split-KV: when the grid is small (decode, or a short chunk over a long cached prefix), the
// key range is cut into splits that write unnormalized partials (max, sum, output) to scratch,
// merged by a second kernel, as ATTN_DECODE does.
//
// Graph-safe planning (decode graphs, runtime/decode_graphs.h): the host plans the grid from the
// batch size and the caller's upper bounds only (max_q_len, max_seq_len; a graph captures with
// max_q_len 1 and max_seq_len = max_model_len), never from host mirrors of per-step data. Each
// sequence's context is divided among the splits on the device (split_chunk), so one captured
// grid is right for every context length; splits that get no keys write an empty partial.
//
// Shared memory: ((R + BK) * ld + R * BK + 4 R) floats, ld = (Dc + Dr) | 1: 75 KB at DeepSeek's
// 512 + 64 with R = BK = 16. The launcher halves R and BK until the device's limit holds them
// (opting into dynamic shared memory above 48 KB where the caps allow it; MUSA's 48 KB gets
// R = BK = 8); supports() refuses a latent width even R = 1, BK = 4 cannot hold.
// Prefill is the same kernel: correct for ragged batches with cached prefixes, but it reads the
// latent once per row block; a tensor-core prefill (or the non-absorbed form) is the fast path
// still to write.
#include <algorithm>
#include <cmath>

#include "backends/gpu/gpu_kernels.h"
#include "backends/gpu/kernel_common.cuh"
#include "backends/gpu/mla_common.h"
#include "ops/op_args_moe.h"
#include "ops/registry.h"

namespace portllm::gpu {

namespace {
constexpr auto kKind = kGpuKind;
constexpr int kThreads = 256;
constexpr int kMaxAcc = 32;                           // output values per thread
constexpr int kMaxRows = 64;                          // rows per block
constexpr int kMaxBK = kWarpSize < 16 ? kWarpSize : 16;  // keys per tile (<= kWarpSize)
constexpr int kMinBK = kMaxBK < 4 ? kMaxBK : 4;
constexpr int kMaxDc = kMaxAcc * kThreads;            // R = 1
constexpr int kMinSplitKeys = 64;                     // no split is given fewer keys
constexpr int kMaxSplits = 64;

struct MlaParams : MlaViews {
  int R, BK, ld, nacc;  // rows per block, keys per tile, smem row stride, outputs per thread
  float scale;
  int splits;  // key splits per row block (grid.z); each sequence's chunk is computed on the device
  float* part_o;   // [T * H, splits, Dc]
  float* part_ml;  // [T * H, splits, 2]
};

size_t smem_bytes(int R, int BK, int ld) {
  return sizeof(float) * (size_t(R + BK) * size_t(ld) + size_t(R) * BK + 3 * size_t(R)) + sizeof(int) * size_t(R);
}
int padded_ld(int Dkv) { return Dkv | 1; }

// Keys per split for a context of ctx keys: an equal share, at least kMinSplitKeys, rounded up to
// whole tiles. splits * chunk >= ctx, so the splits cover the context whatever the host planned.
__device__ __forceinline__ int split_chunk(int ctx, int splits, int BK) {
  const int c = max((ctx + splits - 1) / splits, kMinSplitKeys);
  return (c + BK - 1) / BK * BK;
}

template <class TQ, class TC>
__global__ void __launch_bounds__(kThreads) mla_kernel(MlaParams p) {
  const int b = blockIdx.y, split = blockIdx.z;
  const int q0 = p.qsl[b], q_len = p.qsl[b + 1] - q0, ctx = p.seq_lens[b];
  const int H = p.H, R = p.R, BK = p.BK, Dc = p.Dc, Dkv = p.Dc + p.Dr, lds = p.ld;
  const int64_t nrows = int64_t(q_len) * H;
  const int64_t r0 = int64_t(blockIdx.x) * R;
  if (r0 >= nrows) return;  // whole block past this sequence's rows (uniform)
  const int nr = int(min(int64_t(R), nrows - r0));
  const int tid = threadIdx.x, lane = tid % kWarpSize, warp = tid / kWarpSize;
  constexpr int kWarps = kThreads / kWarpSize;
  const int first_pos = ctx - q_len;  // position of the sequence's first query token

  extern __shared__ float smem[];
  float* sq = smem;             // [R][ld] scaled query rows (latent | rope)
  float* sk = sq + R * lds;      // [BK][ld] latent tile
  float* sp = sk + BK * lds;     // [R][BK] scores, then probabilities
  float* s_m = sp + R * BK;     // [R] running max
  float* s_l = s_m + R;         // [R] running sum
  float* s_a = s_l + R;         // [R] this tile's rescale factor
  int* s_lim = reinterpret_cast<int*>(s_a + R);  // [R] last key position the row may see

  const TQ* ql = static_cast<const TQ*>(p.q_lat);
  const TQ* qp = static_cast<const TQ*>(p.q_pe);
  for (int e = tid; e < R * Dkv; e += kThreads) {
    const int rr = e / Dkv, d = e % Dkv;
    float v = 0.f;
    if (rr < nr) {
      const int64_t row = r0 + rr;
      const int64_t tok = q0 + row / H, h = row % H;
      v = d < Dc ? ld(ql, tok * p.ql_s0 + h * p.ql_s1 + d) : ld(qp, tok * p.qp_s0 + h * p.qp_s1 + (d - Dc));
    }
    sq[rr * lds + d] = v * p.scale;
  }
  for (int rr = tid; rr < R; rr += kThreads) {
    s_m[rr] = -INFINITY;
    s_l[rr] = 0.f;
    s_a[rr] = 1.f;
    s_lim[rr] = rr < nr ? first_pos + int((r0 + rr) / H) : -1;
  }

  // Keys this block looks at: its split's share of this sequence's context, up to its last
  // row's causal limit. (Worked out after the q load on purpose: computed before it, ptxas
  // allocated 64 registers and spilled; here the kernel keeps 80 and no spills.)
  const int max_pos = first_pos + int((r0 + nr - 1) / H);
  const int chunk = split_chunk(ctx, p.splits, BK);
  const int kstart = split * chunk;
  const int kend = min(min(ctx, kstart + chunk), max_pos + 1);
  if (p.splits > 1 && kstart >= kend) {
    // No keys for this split (short context, or past the block's causal limit): an empty
    // partial, which the combine skips. Written every time: in a graph the scratch holds the
    // previous replay's values. The whole block leaves here, before its first barrier.
    for (int rr = tid; rr < nr; rr += kThreads) {
      const int64_t row = r0 + rr;
      const int64_t idx = ((q0 + row / H) * H + row % H) * p.splits + split;
      p.part_ml[idx * 2] = -INFINITY;
      p.part_ml[idx * 2 + 1] = 0.f;
    }
    return;
  }

  float acc[kMaxAcc];
#pragma unroll
  for (int i = 0; i < kMaxAcc; ++i) acc[i] = 0.f;

  const TC* cache = static_cast<const TC*>(p.cache);
  const int32_t* bt = p.block_tables + int64_t(b) * p.bt_s0;
  for (int kt = kstart; kt < kend; kt += BK) {
    __syncthreads();  // q and stats initialized / previous tile consumed
    for (int e = tid; e < BK * Dkv; e += kThreads) {
      const int j = e / Dkv, d = e % Dkv, pos = kt + j;
      float v = 0.f;
      if (pos < kend) {
        // 32-bit index math: a 64-bit division per element would dominate the load loop.
        v = ld(cache, int64_t(bt[pos / p.page]) * p.c_s0 + int64_t(pos % p.page) * p.c_s1 + d);
      }
      sk[j * lds + d] = v;
    }
    __syncthreads();
    for (int pr = tid; pr < R * BK; pr += kThreads) {
      const int rr = pr / BK, j = pr % BK, pos = kt + j;
      float s = -INFINITY;
      if (pos < kend && pos <= s_lim[rr]) {
        const float* qr = sq + rr * lds;
        const float* kr = sk + j * lds;
        float dot = 0.f;
        for (int d = 0; d < Dkv; ++d) dot += qr[d] * kr[d];
        s = dot;
      }
      sp[pr] = s;
    }
    __syncthreads();
    for (int rr = warp; rr < R; rr += kWarps) {  // warp-uniform loop: full-warp shuffles below
      const float s = lane < BK ? sp[rr * BK + lane] : -INFINITY;
      const float m_old = s_m[rr];
      const float m_new = fmaxf(m_old, warp_max(s));
      const float pr = s == -INFINITY ? 0.f : expf(s - m_new);
      const float alpha = m_new == -INFINITY ? 1.f : expf(m_old - m_new);
      const float sum = warp_sum(pr);
      if (lane < BK) sp[rr * BK + lane] = pr;
      if (lane == 0) {
        s_l[rr] = s_l[rr] * alpha + sum;
        s_m[rr] = m_new;
        s_a[rr] = alpha;
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kMaxAcc; ++i) {
      const int o = tid + i * kThreads;
      if (i < p.nacc && o < R * Dc) {
        const int rr = o / Dc, d = o % Dc;
        const float* prow = sp + rr * BK;
        float a = acc[i] * s_a[rr];
        for (int j = 0; j < BK; ++j) a += prow[j] * sk[j * lds + d];
        acc[i] = a;
      }
    }
  }
  __syncthreads();  // final stats visible (also when the block had no keys)

  TQ* out = static_cast<TQ*>(p.out);
#pragma unroll
  for (int i = 0; i < kMaxAcc; ++i) {
    const int o = tid + i * kThreads;
    if (i < p.nacc && o < nr * Dc) {
      const int rr = o / Dc, d = o % Dc;
      const int64_t row = r0 + rr;
      const int64_t tok = q0 + row / H, h = row % H;
      if (p.splits == 1) {
        const float l = s_l[rr];
        out[tok * p.o_s0 + h * p.o_s1 + d] = cvt<TQ>(l > 0.f ? acc[i] / l : 0.f);
      } else {
        p.part_o[((tok * H + h) * p.splits + split) * Dc + d] = acc[i];
      }
    }
  }
  if (p.splits > 1)
    for (int rr = tid; rr < nr; rr += kThreads) {
      const int64_t row = r0 + rr;
      const int64_t tok = q0 + row / H, h = row % H;
      const int64_t idx = (tok * H + h) * p.splits + split;
      p.part_ml[idx * 2] = s_m[rr];
      p.part_ml[idx * 2 + 1] = s_l[rr];
    }
}

// Merges the splits of one (token, head) row: grid (max_q_len * H, B).
template <class TQ>
__global__ void mla_combine_kernel(MlaParams p) {
  const int b = blockIdx.y;
  const int q0 = p.qsl[b], q_len = p.qsl[b + 1] - q0;
  const int64_t row = blockIdx.x;
  if (row >= int64_t(q_len) * p.H) return;
  const int64_t tok = q0 + row / p.H, h = row % p.H;
  const int64_t base = (tok * p.H + h) * p.splits;
  float M = -INFINITY;
  for (int s = 0; s < p.splits; ++s)
    if (p.part_ml[(base + s) * 2 + 1] > 0.f) M = fmaxf(M, p.part_ml[(base + s) * 2]);
  float L = 0.f;
  for (int s = 0; s < p.splits; ++s) {
    const float ls = p.part_ml[(base + s) * 2 + 1];
    if (ls > 0.f) L += ls * expf(p.part_ml[(base + s) * 2] - M);
  }
  TQ* orow = static_cast<TQ*>(p.out) + tok * p.o_s0 + h * p.o_s1;
  for (int d = threadIdx.x; d < p.Dc; d += blockDim.x) {
    float o = 0.f;
    for (int s = 0; s < p.splits; ++s) {
      const float ls = p.part_ml[(base + s) * 2 + 1];
      if (ls > 0.f) o += p.part_o[(base + s) * p.Dc + d] * expf(p.part_ml[(base + s) * 2] - M);
    }
    orow[d] = cvt<TQ>(L > 0.f ? o / L : 0.f);
  }
}

size_t smem_limit(const DeviceCaps& c) { return std::max(c.shared_mem_per_block, c.shared_mem_per_block_optin); }

// Rows per block and keys per tile for a latent width: as many rows as the register budget
// allows (R * Dc <= kMaxAcc * kThreads), no more than there are rows, then halved (R down to 8
// first, then BK, then R) until shared memory fits. Returns false when nothing fits.
bool pick_tiles(int Dc, int Dr, int64_t rows_needed, size_t limit, int& R, int& BK) {
  const int ld = padded_ld(Dc + Dr);
  R = int(std::max<int64_t>(1, std::min<int64_t>({kMaxRows, kMaxDc / std::max(Dc, 1), std::max<int64_t>(1, rows_needed)})));
  BK = kMaxBK;
  while (smem_bytes(R, BK, ld) > limit) {
    if (R > 8)
      R = (R + 1) / 2;
    else if (BK > kMinBK)
      BK /= 2;
    else if (R > 1)
      R = (R + 1) / 2;
    else
      return false;
  }
  return true;
}

void mla_attention(const MlaAttentionArgs& a, Stream& s) {
  const int B = int(a.seq_lens.size(0));
  const int64_t T = a.q_latent.size(0);
  if (B == 0 || T == 0) return;
  MlaParams p{};
  fill_mla_views(p, a);
  p.scale = a.scale;
  if (a.q_pe.dtype != a.q_latent.dtype || a.out.dtype != a.q_latent.dtype)
    fail("mla_attention: q_latent, q_pe and out dtypes differ");
  if (a.latent_cache.size(3) < p.Dc + p.Dr) fail("mla_attention: latent cache narrower than Dc + Dr");

  // Host planning from upper bounds only (graph-safe; see the top of the file): max_q_len must be
  // >= every sequence's query length (rows past a sequence's own are skipped on the device);
  // max_seq_len only steers the split count, the device divides each real context.
  const int max_q = a.max_q_len;
  if (max_q <= 0) fail("mla_attention: max_q_len must bound the longest query (got <= 0)");
  const int max_ctx = std::max(a.max_seq_len, 1);

  const DeviceCaps& caps = caps_of(s);
  const size_t limit = smem_limit(caps);
  if (!pick_tiles(p.Dc, p.Dr, int64_t(max_q) * p.H, limit, p.R, p.BK))
    fail("mla_attention: latent width too large for this device's shared memory");
  p.ld = padded_ld(p.Dc + p.Dr);
  p.nacc = (p.R * p.Dc + kThreads - 1) / kThreads;
  const size_t smem = smem_bytes(p.R, p.BK, p.ld);
  const int row_blocks = int((int64_t(max_q) * p.H + p.R - 1) / p.R);

  // Split the keys when the grid would not fill the device twice over: from the batch's row
  // blocks (exact for decode) and no more splits than kMinSplitKeys-key chunks of max_seq_len.
  const int64_t blocks = std::max<int64_t>(int64_t(B) * row_blocks, 1);
  const int want = int(std::max<int64_t>(1, (2 * int64_t(caps.num_compute_units) + blocks - 1) / blocks));
  p.splits = std::clamp((max_ctx + kMinSplitKeys - 1) / kMinSplitKeys, 1, std::min(want, kMaxSplits));
  std::shared_ptr<void> ws;
  if (p.splits > 1) {
    const size_t rows = size_t(T) * size_t(p.H) * size_t(p.splits);
    ws = scratch(s, rows * (size_t(p.Dc) + 2) * sizeof(float));
    p.part_o = static_cast<float*>(ws.get());
    p.part_ml = p.part_o + rows * size_t(p.Dc);
  }
  dispatch_float(a.q_latent.dtype, [&](auto tq) {
    dispatch_cache(a.latent_cache.dtype, [&](auto tc) {
      using TQ = typename decltype(tq)::type;
      using TC = typename decltype(tc)::type;
      if (smem > 48 * 1024)
        (void)gpuFuncSetAttribute(mla_kernel<TQ, TC>, gpuFuncAttributeMaxDynamicSharedMemorySize, int(smem));
      mla_kernel<TQ, TC><<<dim3(unsigned(row_blocks), unsigned(B), unsigned(p.splits)), kThreads, smem,
                           native_stream(s)>>>(p);
      if (p.splits > 1)
        mla_combine_kernel<TQ><<<dim3(unsigned(int64_t(max_q) * p.H), unsigned(B)), 128, 0, native_stream(s)>>>(p);
    });
  });
  check_launch("mla_attention");
}

bool mla_supports(const OpDesc& d, const DeviceCaps& c) {
  if (!is_gpu_float(d.dtype[0]) || !is_gpu_cache(d.dtype[2])) return false;
  const int64_t Dc = d.dim[0], page = d.dim[1], H = d.dim[2], Dr = d.dim[3];
  if (Dc <= 0 || Dc > kMaxDc || Dr < 0 || page <= 0 || H <= 0) return false;
  int R = 0, BK = 0;
  return pick_tiles(int(Dc), int(Dr), 1, smem_limit(c), R, BK);
}
}  // namespace

void mla_attention_portable(const MlaAttentionArgs& a, Stream& s) { mla_attention(a, s); }

void register_mla_kernels() {
  register_kernel<MlaAttentionArgs>(Op::MLA_ATTENTION, kKind, "gpu.mla_attention", 10, mla_supports, mla_attention);
}

}  // namespace portllm::gpu
