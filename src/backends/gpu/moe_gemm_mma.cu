// MOE_GEMM on NVIDIA tensor cores with mma.sync (sm_80+): the fast grouped GEMM for bf16/f16
// activations with weights of the same dtype or f8_e4m3 blocks. NVIDIA-only fast path (inline PTX
// from mma_sm80.cuh: ldmatrix, mma.sync m16n8k16, cp.async), ARCHITECTURE.md rule 4; its portable
// sibling is gpu.moe_gemm_tiled (moe_gemm.cu), and what this kernel does not take at run time
// (unaligned views, grids past 65535 row tiles) goes to the next MOE_GEMM kernel by priority
// (gpu.moe_gemm_wmma).
//
// Tile walk (grouped_tile.cuh): blockIdx.y is a row tile, blockIdx.x an N tile (N fastest, so the
// blocks in flight share the x rows of a few row tiles and each expert's W slices through L2).
// The grid is an upper bound of row tiles from host-known sizes; each block scans the device-side
// expert_offsets itself and owns up to BM rows of one expert; blocks past the real tiles exit, so
// the op is capturable in a graph (no host reads of device data, no scratch).
//
// Block tile BM x 128 x BK, three shapes picked from the host-known rows per expert (R / E):
//   small  (<= 24 rows per expert: decode batches the GEMV hands over)  32 x 128 x 64, 4 warps of
//          32 x 32, 4 stages;
//   medium (<= 80)                                                        64 x 128 x 64, 4 warps of
//          32 x 64, 3 stages;
//   large  (prefill)                                                     128 x 128 x 32, 8 warps of
//          64 x 32, 4 stages.
// x and 16-bit W tiles go global -> shared by 16-byte cp.async in a multi-stage ring (rows past the
// expert's end, columns past N and k past K zero-filled with src-size 0) into rows padded by 8
// values (ldmatrix conflict-free); fragments by ldmatrix.x4, f32 accumulators, one __syncthreads
// per K step. A warp whose 16-row MMA tiles are all past the tile's rows skips them (decode tiles
// hold a few rows). Outputs are rounded to the activation dtype and stored as 2-value words.
//
// fp8 weights: the raw e4m3 bytes take the same cp.async ring (16 values a copy). Two decoders:
//   registers (the 32-row tile, whose warps each own all rows of their columns, so every weight is
//   decoded once; block_k a multiple of BK or one block over K, block_n a multiple of 8 or one
//   block over N): after the barrier each thread loads its W bytes straight from the raw stage,
//   16 contiguous k values per column (one 16-byte load per 8-column MMA tile), and decodes them
//   exactly with integer ops (e4m3x2: byte permute, shift, mask; bf16 adds one bf16x2 multiply by
//   2^120) into B fragments; K is permuted within the step so that x needs the same contiguous k
//   values (two 16-byte loads per row instead of ldmatrix, conflict-free). The MMAs of one K step
//   and 8-column tile run on the unscaled weights into an f32 partial sum (the first with a zero
//   accumulator), which is multiplied by its block scale (constant over the step and tile) into
//   the accumulator: no f32 round trip per weight, no decoded tile, no rounding of the weights
//   (the reference's product w * scale in double; the kernel's error is the f32 accumulation and
//   the final rounding). 51 KB of shared memory, 161-164 registers, 3 blocks per SM. The integer
//   decode is ~2 ops per weight against ~5 plus a shared-memory store and reload before.
//   shared memory (64/128-row tiles, whose two warp rows would both decode every weight, and other
//   block shapes): at its K step each thread decodes the chunks it copied itself (so no barrier
//   between its copy and its decode) into a double-buffered 16-bit W tile: byte pair -> f16 bits by
//   a byte permute, a mask and a shift (an e4m3 is the f16 with the same sign, exponent and mantissa
//   bits, times 2^8, subnormals included: exact, no f32 subnormals), widened to f32, times 256 x its
//   block scale, rounded once to the activation dtype, as gpu.moe_gemm_wmma does (the reference
//   keeps the product in double; the difference is one rounding of the weight). Block scales are
//   looked up per 16-value chunk (block_k a multiple of 16, or one block over all of K) and per row
//   (any block_n).
// Both decode the e4m3 NaN bytes (0x7f, 0xff) as 480 x scale, not NaN (checkpoints hold none).
#include <algorithm>
#include <type_traits>

#include "backends/gpu/grouped_gemm.h"
#include "backends/gpu/grouped_tile.cuh"
#include "backends/gpu/kernel_common.cuh"
#include "ops/op_args_moe.h"
#include "ops/registry.h"
#if !defined(PORTLLM_GPU_MUSA)
#include "backends/gpu/mma_sm80.cuh"
#endif

namespace portllm::gpu {

#if defined(PORTLLM_GPU_MUSA)
void register_moe_gemm_mma_kernels() {}  // NVIDIA-only fast path; MUSA uses gpu.moe_gemm_tiled
#else
namespace {
using namespace sm80;
constexpr const char* kName = "gpu.moe_gemm_mma";
constexpr int kPriority = 25;  // below gpu.moe_gemm_gemv (30, decode), above gpu.moe_gemm_wmma (20)
static_assert(kWarpSize == 32, "the mma kernel assumes 32-thread warps (NVIDIA)");

template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_>
struct Cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int kThreads = WM * WN * 32;
  static constexpr int LD = BK + 8;        // padded shared row of 16-bit tiles (elements)
  static constexpr int MT = BM / WM / 16;  // 16-row MMA tiles per warp
  static constexpr int NT = BN / WN / 8;   // 8-column MMA tiles per warp
  static_assert(MT >= 1 && NT % 2 == 0 && BK % 16 == 0 && STAGES >= 2, "tile shape");
};
using Small = Cfg<32, 128, 64, 1, 4, 4>;
using Medium = Cfg<64, 128, 64, 2, 2, 3>;
using Large = Cfg<128, 128, 32, 2, 4, 4>;
// Rows per expert (R / E) up to which the smaller tiles are taken.
constexpr int64_t kSmallRows = 24, kMediumRows = 80;

// Dynamic shared memory: STAGES x (x tile, W tile: 16-bit padded, or raw fp8 [BN][BK]) and, for
// fp8 decoded through shared memory (kReg false), two decoded 16-bit W tiles.
template <class C, class TW, bool kReg = false>
struct Smem {
  static constexpr bool kFp8 = std::is_same_v<TW, uint8_t>;
  static constexpr int kA = C::BM * C::LD * 2;
  static constexpr int kW = kFp8 ? C::BN * C::BK : C::BN * C::LD * 2;
  static constexpr int kStage = kA + kW;
  static constexpr int kDecoded = kFp8 && !kReg ? 2 * C::BN * C::LD * 2 : 0;
  // kDynSmemAlign: room to start the region on a 128-byte boundary past the static scan array
  // (dyn_smem_pad), so that the raw fp8 rows' copies land on 32-byte units.
  static constexpr size_t kBytes = kDynSmemAlign + size_t(C::STAGES) * kStage + kDecoded;
  static_assert(kA % 16 == 0 && kW % 16 == 0, "16-byte aligned tiles");
};

// Which rows this block owns: expert e, rows [row0, row0 + rows) (0 < rows <= BM); false past the
// real tiles. Tile index blockIdx.y; the block scans the expert tiles itself (grouped_tile.cuh).
// Every thread calls it and all get the same answer. smem: blockDim.x + 2 ints.
template <int BM>
__device__ __forceinline__ bool find_tile(const GroupedGemmParams& p, int* smem, int& e, int& row0, int& rows) {
  int64_t r0, r1;
  if (!grouped_tile_scan<BM>(p, smem, int(blockIdx.y), e, r0, r1)) return false;
  row0 = int(r0);
  rows = int(r1 - r0);
  return rows > 0;
}

// Four e4m3 bytes (byte i = value i) times s, rounded to TX, as two words of two values. A byte
// pair becomes f16 bits [s|0eeee|mmm0000000] (the e4m3 value times 2^-8, exactly, subnormals too),
// so s carries the 2^8 back.
template <class TX>
__device__ __forceinline__ void fp8x4_to(uint32_t w, float s, uint32_t& lo, uint32_t& hi) {
  const uint32_t t0 = __byte_perm(w, 0u, 0x1404), t1 = __byte_perm(w, 0u, 0x3424);  // [0, b0, 0, b1], [0, b2, 0, b3]
  const uint32_t h0 = (t0 & 0x80008000u) | ((t0 >> 1) & 0x3f803f80u);
  const uint32_t h1 = (t1 & 0x80008000u) | ((t1 >> 1) & 0x3f803f80u);
  const float2 f0 = __half22float2(*reinterpret_cast<const __half2*>(&h0));
  const float2 f1 = __half22float2(*reinterpret_cast<const __half2*>(&h1));
  lo = Mma<TX>::pack(f0.x * s, f0.y * s);
  hi = Mma<TX>::pack(f1.x * s, f1.y * s);
}

// Bytes 2 PAIR and 2 PAIR + 1 of w (e4m3) as a word of two TX values, exactly, with integer ops: a
// byte permute puts each byte under a byte holding its sign replicated ([b, sign(b)] per 16-bit
// lane), a shift moves the exponent and mantissa bits into place (under the sign bit the shift
// brings from the replicated byte) and a mask clears the rest. f16: [s|0eeee|mmm0000000], the value
// times 2^-8 (e4m3 subnormals become f16 subnormals with the same ratio). bf16: [s|0000eeee|mmm0000]
// is the value times 2^-120 (subnormal bf16 for e = 0), so one bf16x2 multiply by 2^120 (exact:
// the result is an e4m3 value; bf16 arithmetic keeps subnormal inputs) gives the value itself.
// NaN bytes (0x7f, 0xff) decode as +-480. Checked for all bytes against the e4m3 definition.
template <class TX, int PAIR>
__device__ __forceinline__ uint32_t e4m3x2(uint32_t w) {
  uint32_t t;
  asm("prmt.b32 %0, %1, %1, %2;\n" : "=r"(t) : "r"(w), "n"(PAIR ? 0xB3A2 : 0x9180));
  if constexpr (std::is_same_v<TX, gpu_half>) {
    return (t << 7) & 0xbf80bf80u;
  } else {
    const uint32_t h = (t << 4) & 0x87f087f0u;
    uint32_t v;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(v) : "r"(h), "r"(0x7b807b80u), "r"(0x80008000u));  // x 2^120 + -0
    return v;
  }
}
// What e4m3x2's values must be multiplied by to be the weights: 2^8 (f16) or 1 (bf16).
template <class TX>
constexpr float kE4m3Unscale = std::is_same_v<TX, gpu_half> ? 256.f : 1.f;

// c = a b with no accumulator (the first MMA of a partial sum).
template <class TX>
__device__ __forceinline__ void mma_zero(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<TX, gpu_half>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%10,%10,%10};\n"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.f));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%10,%10,%10};\n"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.f));
  }
}

// kReg (fp8, WM == 1: each W value feeds one warp): no decoded tile; see the file comment. 3 blocks
// per SM: at 4 (128 registers) ptxas spills 76 bytes and the V2-Lite decode case took 220 us, not 159.
template <class C, class TX, class TW, bool kReg>
__global__ void __launch_bounds__(C::kThreads, kReg ? 3 : 2) moe_gemm_mma_kernel(GroupedGemmParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using S = Smem<C, TW, kReg>;
  constexpr bool kFp8 = S::kFp8;
  static_assert(!kReg || (kFp8 && C::WM == 1 && C::BK % 32 == 0), "register decode: fp8, one warp row");
  constexpr int BM = C::BM, BN = C::BN, BK = C::BK, LD = C::LD, T = C::kThreads, ST = C::STAGES;
  constexpr int MT = C::MT, NT = C::NT;
  constexpr int ACH = BK / 8;                         // 16-byte chunks of a 16-bit row slice
  constexpr int WCH = kFp8 ? BK / 16 : ACH;           // ... of a W row slice
  constexpr int WV = kFp8 ? 16 : 8;                   // W values per chunk
  constexpr int AJ = BM * ACH / T, WJ = BN * WCH / T;  // chunks per thread and stage
  static_assert(AJ * T == BM * ACH && WJ * T == BN * WCH && AJ >= 1 && WJ >= 1, "copy split");

  __shared__ int scan[T + 2];
  extern __shared__ __align__(16) unsigned char smem_base[];
  unsigned char* const smem = smem_base + dyn_smem_pad(smem_base);
  int e, row0, rows;
  if (!find_tile<BM>(p, scan, e, row0, rows)) return;  // whole block

  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int n0 = int(blockIdx.x) * BN, N = int(p.N), K = int(p.K);
  const int nk = (K + BK - 1) / BK;
  const TX* x = static_cast<const TX*>(p.x);
  const TW* w = static_cast<const TW*>(p.w) + int64_t(e) * p.w_es;

  // Each thread copies the same rows at every stage (chunk column ca / cw, rows tid / CH + j T / CH):
  // row sources are fixed, only k advances. Invalid rows copy nothing (src-size 0: zeros).
  const int ca = tid % ACH, cw = tid % WCH;
  const TX* xs[AJ];
  int xsz[AJ];
#pragma unroll
  for (int j = 0; j < AJ; ++j) {
    const int r = tid / ACH + j * (T / ACH);
    xsz[j] = r < rows ? 16 : 0;
    xs[j] = x + (r < rows ? int64_t(row0 + r) * p.x_ld : 0) + ca * 8;
  }
  const TW* ws[WJ];
  int wsz[WJ];
#pragma unroll
  for (int j = 0; j < WJ; ++j) {
    const int gn = n0 + tid / WCH + j * (T / WCH);
    wsz[j] = gn < N ? 16 : 0;
    ws[j] = w + (gn < N ? int64_t(gn) * p.w_ld : 0) + cw * WV;
  }
  // fp8 through shared memory: each copied row's scale row (rows past N read the last one; their
  // weights are zeros).
  const float* srow[kFp8 && !kReg ? WJ : 1];
  if constexpr (kFp8 && !kReg) {
#pragma unroll
    for (int j = 0; j < WJ; ++j) {
      const int gn = min(n0 + tid / WCH + j * (T / WCH), N - 1);
      srow[j] = p.scale + int64_t(e) * p.s_es + int64_t(gn / p.block_n) * p.s_s0;
    }
  }

  auto stage_a = [&](int st) { return reinterpret_cast<TX*>(smem + st * S::kStage); };
  auto stage_w = [&](int st) { return smem + st * S::kStage + S::kA; };
  TX* const decoded = reinterpret_cast<TX*>(smem + ST * S::kStage);  // fp8: 2 x [BN][LD]

  auto issue = [&](int ks, int st) {
    const int k0 = ks * BK;
    TX* sa = stage_a(st);
    const bool ka = k0 + ca * 8 < K;
#pragma unroll
    for (int j = 0; j < AJ; ++j) {
      const int r = tid / ACH + j * (T / ACH);
      cp_async16(sa + r * LD + ca * 8, ka ? xs[j] + k0 : x, ka ? xsz[j] : 0);
    }
    unsigned char* sw = stage_w(st);
    const bool kw = k0 + cw * WV < K;
#pragma unroll
    for (int j = 0; j < WJ; ++j) {
      const int n = tid / WCH + j * (T / WCH);
      void* dst = kFp8 ? static_cast<void*>(sw + n * BK + cw * 16)
                       : static_cast<void*>(reinterpret_cast<TX*>(sw) + n * LD + cw * 8);
      cp_async16(dst, kw ? ws[j] + k0 : w, kw ? wsz[j] : 0);
    }
  };

  const int wm = warp / C::WN, wn = warp % C::WN;
  const int wrow = wm * (BM / C::WM), wcol = wn * (BN / C::WN);
  const int mt_live = min(MT, max(0, (rows - wrow + 15) / 16));  // warp-uniform
  float acc[MT][NT][4] = {};

#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < nk) issue(s, s);
    cp_async_commit();
  }
  // kReg: the block scales of this warp's 8-column MMA tiles (one column block each: host-checked)
  // for k block kb, which advances every spb K steps (block_k a multiple of BK, or one block).
  const float* const sbase = kReg ? p.scale + int64_t(e) * p.s_es : nullptr;
  int soff[kReg ? NT : 1];
  int kb = 0, kleft = 0, spb = 0;
  if constexpr (kReg) {
#pragma unroll
    for (int i = 0; i < NT; ++i) soff[i] = min(n0 + wcol + 8 * i, N - 1) / p.block_n * int(p.s_s0);
    spb = p.block_k >= K ? nk : p.block_k / BK;
    kleft = spb;
  }
  for (int ks = 0; ks < nk; ++ks) {
    const int st = ks % ST;
    float sc[kFp8 ? (kReg ? NT : WJ) : 1];
    if constexpr (kReg) {  // issued before the wait: the loads' latency hides behind it and the MMAs
      if (kleft == 0) {
        ++kb;
        kleft = spb;
      }
      --kleft;
#pragma unroll
      for (int i = 0; i < NT; ++i) sc[i] = __ldg(sbase + soff[i] + kb * int(p.s_s1)) * kE4m3Unscale<TX>;
    } else if constexpr (kFp8) {  // issued before the wait: the loads' latency hides behind it
      const int kb = min(ks * BK + cw * 16, K - 1) / p.block_k;
#pragma unroll
      for (int j = 0; j < WJ; ++j) sc[j] = __ldg(srow[j] + int64_t(kb) * p.s_s1) * 256.f;
    }
    cp_async_wait<ST - 2>();  // this thread's copies of step ks have landed
    const TX* sb = nullptr;
    if constexpr (kFp8 && !kReg) {
      // Decode the chunks this thread copied into buffer ks & 1 (last read at step ks - 2, before
      // the previous barrier).
      TX* d = decoded + (ks & 1) * BN * LD;
      const unsigned char* sw = stage_w(st);
#pragma unroll
      for (int j = 0; j < WJ; ++j) {
        const int n = tid / WCH + j * (T / WCH);
        const uint4 raw = *reinterpret_cast<const uint4*>(sw + n * BK + cw * 16);
        uint4 v0, v1;
        fp8x4_to<TX>(raw.x, sc[j], v0.x, v0.y);
        fp8x4_to<TX>(raw.y, sc[j], v0.z, v0.w);
        fp8x4_to<TX>(raw.z, sc[j], v1.x, v1.y);
        fp8x4_to<TX>(raw.w, sc[j], v1.z, v1.w);
        uint4* o = reinterpret_cast<uint4*>(d + n * LD + cw * 16);
        o[0] = v0;
        o[1] = v1;
      }
      sb = d;
    } else if constexpr (!kReg) {
      sb = reinterpret_cast<const TX*>(stage_w(st));
    }
    __syncthreads();  // step ks visible to all; every warp is done with step ks - 1's stage
    {
      const int kn = ks + ST - 1;
      if (kn < nk) issue(kn, kn % ST);
      cp_async_commit();  // possibly empty: keeps the group count in step with ks
    }
    if (mt_live == 0) continue;  // this warp's rows are all past the tile's (it still copies and decodes)
    const TX* sa = stage_a(st);
    if constexpr (kReg) {
      // K permuted within the step: the thread with lane % 4 == q feeds MMA k slice j (16 k) with
      // the k values q KQ + 4 j .. + 3, both in x (registers a0/a2 of each row) and in W (b0/b1), so
      // its x values are KQ contiguous ones per row (16-byte loads, conflict-free with LD = BK + 8)
      // and its W bytes KQ contiguous ones per column (one 16-byte load per 8-column tile).
      constexpr int KQ = BK / 4, AW = KQ / 2, WW = KQ / 4;  // k values, x words, W words per thread
      static_assert(MT <= 2, "live MMA row tiles: 1 or MT");
      const int g = lane / 4, q = lane % 4;
      const unsigned char* sw = stage_w(st);
      // ML live row tiles as a constant, so that the step is one straight block to schedule.
      auto step = [&](auto live) {
        constexpr int ML = decltype(live)::value;
        uint32_t af[ML][2][AW];
#pragma unroll
        for (int t = 0; t < ML; ++t)
#pragma unroll
          for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int h = 0; h < AW / 4; ++h) {
              const uint4 v = *reinterpret_cast<const uint4*>(sa + (wrow + 16 * t + g + 8 * r) * LD + q * KQ + 8 * h);
              af[t][r][4 * h] = v.x;
              af[t][r][4 * h + 1] = v.y;
              af[t][r][4 * h + 2] = v.z;
              af[t][r][4 * h + 3] = v.w;
            }
#pragma unroll
        for (int i = 0; i < NT; ++i) {
          uint32_t raw[WW];
          const unsigned char* wp = sw + (wcol + 8 * i + g) * BK + q * KQ;
          if constexpr (WW == 4) {
            const uint4 v = *reinterpret_cast<const uint4*>(wp);
            raw[0] = v.x, raw[1] = v.y, raw[2] = v.z, raw[3] = v.w;
          } else {
            const uint2 v = *reinterpret_cast<const uint2*>(wp);
            raw[0] = v.x, raw[1] = v.y;
          }
          // This step's product for the 8 columns in f32 from exact weights, then scaled into acc.
          float part[ML][4];
#pragma unroll
          for (int j = 0; j < WW; ++j) {
            const uint32_t b0 = e4m3x2<TX, 0>(raw[j]), b1 = e4m3x2<TX, 1>(raw[j]);
#pragma unroll
            for (int t = 0; t < ML; ++t) {
              const uint32_t a[4] = {af[t][0][2 * j], af[t][1][2 * j], af[t][0][2 * j + 1], af[t][1][2 * j + 1]};
              if (j == 0) mma_zero<TX>(part[t], a, b0, b1);
              else Mma<TX>::run(part[t], a, b0, b1);
            }
          }
#pragma unroll
          for (int t = 0; t < ML; ++t)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[t][i][c] = fmaf(sc[i], part[t][c], acc[t][i][c]);
        }
      };
      if (mt_live == MT) step(std::integral_constant<int, MT>{});
      else step(std::integral_constant<int, 1>{});
    } else {
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        uint32_t af[MT][4];
#pragma unroll
        for (int t = 0; t < MT; ++t)
          if (t < mt_live) ldsm_x4(af[t], sa + (wrow + 16 * t + lane % 16) * LD + kk + (lane / 16) * 8);
#pragma unroll
        for (int n2 = 0; n2 < NT / 2; ++n2) {
          uint32_t bf[4];
          ldsm_x4(bf, sb + (wcol + 16 * n2 + lane % 8 + (lane / 16) * 8) * LD + kk + ((lane / 8) % 2) * 8);
#pragma unroll
          for (int t = 0; t < MT; ++t)
            if (t < mt_live) {
              Mma<TX>::run(acc[t][2 * n2], af[t], bf[0], bf[1]);
              Mma<TX>::run(acc[t][2 * n2 + 1], af[t], bf[2], bf[3]);
            }
        }
      }
    }
  }

  TX* out = static_cast<TX*>(p.out);
#pragma unroll
  for (int t = 0; t < MT; ++t) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = wrow + 16 * t + lane / 4 + 8 * h;
      if (r >= rows) continue;
      TX* orow = out + int64_t(row0 + r) * p.out_ld;
#pragma unroll
      for (int i = 0; i < NT; ++i) {
        const int n = n0 + wcol + i * 8 + (lane % 4) * 2;
        if (n + 1 < N) *reinterpret_cast<uint32_t*>(orow + n) = Mma<TX>::pack(acc[t][i][2 * h], acc[t][i][2 * h + 1]);
        else if (n < N) orow[n] = cvt<TX>(acc[t][i][2 * h]);
      }
    }
  }
#endif
}

template <class C, class TX, class TW, bool kReg = false>
void launch_cfg(const GroupedGemmParams& p, int64_t tiles, gpuStream_t st) {
  constexpr size_t smem = Smem<C, TW, kReg>::kBytes;
  // Per launch, like the attention kernels: the attribute belongs to the current device.
  (void)gpuFuncSetAttribute(moe_gemm_mma_kernel<C, TX, TW, kReg>, gpuFuncAttributeMaxDynamicSharedMemorySize,
                            int(smem));
  const int64_t ntiles = (p.N + C::BN - 1) / C::BN;
  moe_gemm_mma_kernel<C, TX, TW, kReg><<<dim3(unsigned(ntiles), unsigned(tiles)), C::kThreads, smem, st>>>(p);
  check_launch("moe_gemm_mma");
}

template <class C>
int64_t row_tiles(const GroupedGemmParams& p) {
  return p.expert_offsets ? grouped_tile_bound(p.rows, p.num_experts, C::BM) : (p.rows + C::BM - 1) / C::BM;
}

// 16-byte copies of x and W rows, 4-byte output stores, scales the per-chunk lookup can use.
bool views_ok(const GroupedGemmParams& p) {
  const bool fp8 = p.w_t == DType::F8E4M3;
  const int64_t ws = fp8 ? 1 : 2, wv = fp8 ? 16 : 8;
  if (!aligned16(p.x) || p.x_ld % 8 != 0 || !aligned16(p.w) || (p.w_ld * ws) % 16 != 0 || (p.w_es * ws) % 16 != 0 ||
      p.K % wv != 0)
    return false;
  if (reinterpret_cast<uintptr_t>(p.out) % 4 != 0 || p.out_ld % 2 != 0) return false;
  if (fp8 && (!p.scale || p.block_n <= 0 || p.block_k <= 0 || (p.block_k % 16 != 0 && p.block_k < p.K))) return false;
  return p.rows < (int64_t(1) << 31) && p.N < (int64_t(1) << 31) && p.K < (int64_t(1) << 31);
}

// fp8 scales the register decode can apply per MMA tile and K step: block_k a multiple of the
// small tile's BK (or one block over K), block_n a multiple of 8 (or one block over N), and scale
// offsets in int.
bool reg_decode_ok(const GroupedGemmParams& p) {
  if (p.w_t != DType::F8E4M3) return false;
  if (!(p.block_k >= p.K || p.block_k % Small::BK == 0) || !(p.block_n >= p.N || p.block_n % 8 == 0)) return false;
  const int64_t sn = (p.N + p.block_n - 1) / p.block_n, sk = (p.K + p.block_k - 1) / p.block_k;
  return (sn - 1) * p.s_s0 + (sk - 1) * p.s_s1 < (int64_t(1) << 31);
}

template <class TX, class TW>
void launch_typed(const GroupedGemmParams& p, int64_t per_expert, gpuStream_t st) {
  if (per_expert <= kSmallRows && row_tiles<Small>(p) <= 65535) {
    if constexpr (std::is_same_v<TW, uint8_t>)
      if (reg_decode_ok(p)) return launch_cfg<Small, TX, TW, true>(p, row_tiles<Small>(p), st);
    return launch_cfg<Small, TX, TW>(p, row_tiles<Small>(p), st);
  }
  if (per_expert <= kMediumRows && row_tiles<Medium>(p) <= 65535)
    return launch_cfg<Medium, TX, TW>(p, row_tiles<Medium>(p), st);
  launch_cfg<Large, TX, TW>(p, row_tiles<Large>(p), st);
}

void moe_gemm_mma(const MoeGemmArgs& a, Stream& s) {
  if (a.x.size(0) == 0 || a.w.size(0) == 0 || a.w.size(1) == 0) return;
  const GroupedGemmParams p = moe_gemm_params(a);
  if (!views_ok(p) || row_tiles<Large>(p) > 65535) return next_moe_gemm_kernel(a, s, kName, kPriority).run(&a, s);
  if (p.out_t != p.x_t) fail("moe_gemm_mma: output dtype must be the activation dtype");
  const int64_t per_expert = p.rows / std::max(1, p.num_experts);
  const gpuStream_t st = native_stream(s);
  const bool fp8 = p.w_t == DType::F8E4M3;
  if (p.x_t == DType::BF16 && (fp8 || p.w_t == DType::BF16)) {
    if (fp8) launch_typed<gpu_bf16, uint8_t>(p, per_expert, st);
    else launch_typed<gpu_bf16, gpu_bf16>(p, per_expert, st);
  } else if (p.x_t == DType::F16 && (fp8 || p.w_t == DType::F16)) {
    if (fp8) launch_typed<gpu_half, uint8_t>(p, per_expert, st);
    else launch_typed<gpu_half, gpu_half>(p, per_expert, st);
  } else {
    fail("moe_gemm_mma: bf16/f16 activations with same-dtype or fp8 weights only");
  }
}

constexpr size_t kMaxSmem = std::max({Smem<Small, uint16_t>::kBytes, Smem<Small, uint8_t>::kBytes,
                                      Smem<Medium, uint16_t>::kBytes, Smem<Medium, uint8_t>::kBytes,
                                      Smem<Large, uint16_t>::kBytes, Smem<Large, uint8_t>::kBytes});

bool supports(const OpDesc& d, const DeviceCaps& c) {
  const DType x = d.dtype[0], w = d.dtype[1], o = d.dtype[2];
  if (d.flags != 0) return false;  // no gather mode (moe_gemv.cu has it)
  if (c.vendor != "nvidia" || c.arch < 80 || (x != DType::BF16 && x != DType::F16) || o != x) return false;
  if (x == DType::BF16 && !c.bf16_matmul) return false;
  if (w != x && w != DType::F8E4M3) return false;
  const int64_t N = d.dim[1], K = d.dim[2], block_k = d.dim[3];
  if (N >= (int64_t(1) << 31) || K >= (int64_t(1) << 31)) return false;
  if (w == DType::F8E4M3 && (K % 16 != 0 || (block_k > 0 && block_k % 16 != 0 && block_k < K))) return false;
  if (K % 8 != 0) return false;
  return kMaxSmem <= std::max(c.shared_mem_per_block_optin, c.shared_mem_per_block);
}
}  // namespace

void register_moe_gemm_mma_kernels() {
  register_kernel<MoeGemmArgs>(Op::MOE_GEMM, DeviceKind::CUDA, kName, kPriority, supports, moe_gemm_mma);
}
#endif

}  // namespace portllm::gpu
