// NVIDIA tensor-core and async-copy primitives for sm_80+ (inline PTX), shared by the attention
// fast paths. ARCHITECTURE.md rule 4: only NVIDIA-only fast-path files include this header, and
// each of those has a portable sibling; MUSA builds never see it.
#pragma once
#if defined(PORTLLM_GPU_MUSA)
#error "mma_sm80.cuh is NVIDIA-only"
#endif
#include <cstdint>

#include "backends/gpu/fp8_f16_bits.h"
#include "backends/gpu/kernel_common.cuh"

namespace portllm::gpu::sm80 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// A kernel's dynamic shared memory starts after its static __shared__ arrays, 16-byte aligned
// only; from 16 bytes past a 32-byte boundary every 32-byte sector a 16-byte-per-lane cp.async
// brings straddles two 32-byte units of shared memory (ncu: twice the ideal L2 sectors, four times
// the ideal wavefronts; BENCHMARKS.md, twenty-fifth session). Kernels with static arrays start
// their region dyn_smem_pad(base) bytes in, having asked for kDynSmemAlign more bytes.
constexpr unsigned kDynSmemAlign = 128;
__device__ __forceinline__ unsigned dyn_smem_pad(const void* base) { return (0u - smem_addr(base)) & (kDynSmemAlign - 1); }
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

template <class T> struct Mma;
template <> struct Mma<gpu_bf16> {
  __device__ __forceinline__ static void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
};
template <> struct Mma<gpu_half> {
  __device__ __forceinline__ static void run(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
};

// Four e4m3 values (byte i = value i) as four f16 values, exactly, in two words (values 0, 1 in
// lo; 2, 3 in hi): the tensor-core attention kernels widen fp8 KV tiles with it (their MMAs run in
// f16 for fp8 caches). sm_89+: the hardware's packed conversion, one instruction per pair.
// sm_80: the bit placement of fp8_f16_bits.h (2^-8 times the value) and one packed multiply by
// 2^8, which keeps f16 subnormals (no .ftz). Widening to bf16 instead (shifts and a bf16 multiply
// by 2^120, ~5 instructions per pair on every architecture) made the fp8 cache no faster than
// bf16 (attention_decode_mma.cu).
__device__ __forceinline__ void widen_fp8x4_f16(uint32_t w, uint32_t& lo, uint32_t& hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(lo), "=r"(hi)
      : "r"(w));
#else
  uint32_t a, b;
  fp8x4_to_f16x4_div256(w, a, b);
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(lo) : "r"(a), "r"(0x5c005c00u));  // 0x5c00 = 2^8
  asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(hi) : "r"(b), "r"(0x5c005c00u));
#endif
}

// Rows x D e4m3 values (row stride D) widened to f16 in rows of stride D + 8 (the padded rows
// ldmatrix reads), shared among N threads (this one is t): 8 values per step, a warp's loads and
// stores each covering contiguous runs (no bank conflicts).
template <int D, int Rows, int N>
__device__ __forceinline__ void widen_fp8_tile(gpu_half* dst, const uint8_t* src, int t) {
  constexpr int kChunks = D / 8;  // 8-value chunks per row
  static_assert(Rows * kChunks % N == 0, "whole steps per thread");
#pragma unroll 4  // 4 loads in flight; a full unroll holds all of them in registers at once
  for (int k = 0; k < Rows * kChunks / N; ++k) {
    const int i = k * N + t, r = i / kChunks, c = i % kChunks;
    const uint2 v = *reinterpret_cast<const uint2*>(src + r * D + c * 8);
    uint4 o;
    widen_fp8x4_f16(v.x, o.x, o.y);
    widen_fp8x4_f16(v.y, o.z, o.w);
    *reinterpret_cast<uint4*>(dst + r * (D + 8) + c * 8) = o;
  }
}

// Eight bf16 values as f16, saturating at +-65504 (rounded to nearest): query rows entering the
// fp8-cache attention kernels, whose MMAs run in f16 (the fp8 widening is one instruction per
// pair to f16, ~5 to bf16; f16 holds a query's values more finely than bf16 does).
__device__ __forceinline__ uint4 bf16x8_to_f16x8_satfinite(uint4 v, float scale = 1.f) {
  float f[8];
  unpack8<gpu_bf16>(v, f);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = fminf(fmaxf(f[i] * scale, -65504.f), 65504.f);
  return make_uint4(Mma<gpu_half>::pack(f[0], f[1]), Mma<gpu_half>::pack(f[2], f[3]), Mma<gpu_half>::pack(f[4], f[5]),
                    Mma<gpu_half>::pack(f[6], f[7]));
}

// 2^x in one MUFU instruction, subnormal results flushed to zero: the attention kernels' online
// softmax, whose exponents are at most 0 (a score minus its row's running maximum), so what is
// flushed is below 2^-126 of the row's largest term. exp2f spends ~3 more instructions per value
// on the subnormal range.
__device__ __forceinline__ float ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Reductions over the 4 lanes of an MMA accumulator quad (the lanes holding one row's columns).
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
// Reductions over the 8 lanes holding one column pair of an MMA accumulator (lanes t, t + 4, ...,
// t + 28: the rows g = 0 .. 7).
__device__ __forceinline__ float column_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 8));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 16));
}
__device__ __forceinline__ float column_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  return v + __shfl_xor_sync(0xffffffffu, v, 16);
}

// An 8x8 matrix of 16-bit values in the accumulator-pair layout (lane (g, t) holds row g, columns
// 2t and 2t + 1), transposed across the warp into the same layout (sm_75+): an accumulator pair
// becomes a B fragment half (lane (g, t) then holds column g, rows 2t and 2t + 1).
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// 16-byte global -> shared copy that bypasses registers (cp.async, L2 only). src_bytes = 0
// writes 16 zero bytes instead of reading (rows past the end of a context).
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)), "l"(gmem_src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

}  // namespace portllm::gpu::sm80
