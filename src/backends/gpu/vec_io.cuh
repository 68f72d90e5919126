// Vector access for the row and elementwise kernels (pointwise.cu, KV_WRITE): N consecutive values
// of T (f32, bf16, f16, or an fp8 KV cache's e4m3) widened to float (load_vec) or rounded from float
// (store_vec, cvt<T>: saturating for fp8) in 8-, 16- or 32-byte accesses,
// N = 1 being the scalar path. Launchers check the view with vec_view() and take N = 1 when the
// pointer or a stride rules vectors out. Portable CUDA C++ (uint2/uint4/float4 only): MUSA builds it.
#pragma once
#include <algorithm>
#include <type_traits>

#include "backends/gpu/kernel_common.cuh"

namespace portllm::gpu {

// Values of T in one 16-byte access (16 for fp8, 8 for bf16/f16, 4 for f32).
template <class T> inline constexpr int kVec16 = 16 / int(sizeof(T));

template <class T> __device__ __forceinline__ void unpack2(uint32_t w, float* f);
template <> __device__ __forceinline__ void unpack2<gpu_bf16>(uint32_t w, float* f) {
  f[0] = __uint_as_float(w << 16);
  f[1] = __uint_as_float(w & 0xffff0000u);
}
template <> __device__ __forceinline__ void unpack2<gpu_half>(uint32_t w, float* f) {
  const gpu_half* h = reinterpret_cast<const gpu_half*>(&w);
  f[0] = gpu_half_to_f32(h[0]);
  f[1] = gpu_half_to_f32(h[1]);
}
// Two floats rounded to T (the vendor's round-to-nearest conversion, as cvt<T>) in one word.
template <class T> __device__ __forceinline__ uint32_t pack2(float a, float b) {
  const T h[2] = {cvt<T>(a), cvt<T>(b)};
  return *reinterpret_cast<const uint32_t*>(h);
}

// W 32-bit words at p in one 4- or 8-byte access (W = 1, 2) or in 16-byte accesses (W % 4 == 0):
// the access pattern every dtype's vectors share; p is aligned to the access (vec_view).
template <int W>
__device__ __forceinline__ void load_words(const void* p, uint32_t* w) {
  static_assert(W == 1 || W == 2 || W % 4 == 0, "vectors are 4 or 8 bytes or whole 16-byte accesses");
  if constexpr (W == 1) {
    w[0] = *static_cast<const uint32_t*>(p);
  } else if constexpr (W == 2) {
    const uint2 v = *static_cast<const uint2*>(p);
    w[0] = v.x;
    w[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < W / 4; ++i) {
      const uint4 v = static_cast<const uint4*>(p)[i];
      w[4 * i] = v.x;
      w[4 * i + 1] = v.y;
      w[4 * i + 2] = v.z;
      w[4 * i + 3] = v.w;
    }
  }
}
template <int W>
__device__ __forceinline__ void store_words(void* p, const uint32_t* w) {
  static_assert(W == 1 || W == 2 || W % 4 == 0, "vectors are 4 or 8 bytes or whole 16-byte accesses");
  if constexpr (W == 1) {
    *static_cast<uint32_t*>(p) = w[0];
  } else if constexpr (W == 2) {
    *static_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  } else {
#pragma unroll
    for (int i = 0; i < W / 4; ++i) static_cast<uint4*>(p)[i] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
  }
}

// N values per access: f32 2 or 4k, bf16/f16 4 or 8k, fp8 4, 8 or 16k (8 or 16k bytes), or 1.
template <class T, int N>
__device__ __forceinline__ void load_vec(const T* p, float* f) {
  if constexpr (N == 1) {
    f[0] = ld(p, 0);
  } else {
    static_assert(N * sizeof(T) % 4 == 0, "whole words");
    uint32_t w[N * sizeof(T) / 4];
    load_words<N * sizeof(T) / 4>(p, w);
#pragma unroll
    for (int i = 0; i < N * int(sizeof(T)) / 4; ++i) {
      if constexpr (std::is_same_v<T, float>) f[i] = __uint_as_float(w[i]);
      else if constexpr (sizeof(T) == 2) unpack2<T>(w[i], f + 2 * i);
      else
#pragma unroll
        for (int k = 0; k < 4; ++k) f[4 * i + k] = f8e4m3_to_f32(uint8_t(w[i] >> (8 * k)));
    }
  }
}

template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const float* f) {
  if constexpr (N == 1) {
    p[0] = cvt<T>(f[0]);
  } else {
    static_assert(N * sizeof(T) % 4 == 0, "whole words");
    uint32_t w[N * sizeof(T) / 4];
#pragma unroll
    for (int i = 0; i < N * int(sizeof(T)) / 4; ++i) {
      if constexpr (std::is_same_v<T, float>) w[i] = __float_as_uint(f[i]);
      else if constexpr (sizeof(T) == 2) w[i] = pack2<T>(f[2 * i], f[2 * i + 1]);
      else
        w[i] = uint32_t(cvt<T>(f[4 * i]).bits) | uint32_t(cvt<T>(f[4 * i + 1]).bits) << 8 |
               uint32_t(cvt<T>(f[4 * i + 2]).bits) << 16 | uint32_t(cvt<T>(f[4 * i + 3]).bits) << 24;
    }
    store_words<N * sizeof(T) / 4>(p, w);
  }
}

// SILU_MUL's arithmetic, silu(g) * u: one expression for every kernel that applies the SwiGLU
// (pointwise.cu, the fused GEMV epilogues, MOE_DOWN_COMBINE), so their results agree bit for bit.
__device__ __forceinline__ float silu_times(float g, float u) { return g / (1.f + __expf(-g)) * u; }

// v rounded to T and widened back (what a value stored in T and reloaded reads as).
template <class T> __device__ __forceinline__ float round_to(float v) {
  const T t = cvt<T>(v);
  return ld(&t, 0);
}

// Whether accesses of n values work on a view whose last dim is contiguous: the data pointer is
// aligned to the access size (at most 16 bytes), and the row length and every outer stride are
// multiples of n, so every row starts aligned too.
inline bool vec_view(const Tensor& t, int n) {
  if (n == 1) return true;
  if (!t.defined() || t.ndim < 1 || t.strides[t.ndim - 1] != 1 || t.shape[t.ndim - 1] % n != 0) return false;
  const uintptr_t align = uintptr_t(std::min<int64_t>(16, int64_t(n) * int64_t(dtype_size(t.dtype))));
  if (reinterpret_cast<uintptr_t>(t.data) % align != 0) return false;
  for (int d = 0; d < t.ndim - 1; ++d)
    if (t.shape[d] > 1 && t.strides[d] % n != 0) return false;
  return true;
}

// Blocks for a grid-stride loop over `work` blocks' worth of items: at most one full wave (2048
// resident threads per compute unit, the figure of every NVIDIA part since sm_80; elsewhere it only
// sizes the loop), so each block loops instead of new blocks being scheduled.
inline unsigned wave_grid(Stream& s, int64_t work_blocks, int threads) {
  const int64_t per_cu = std::max(1, 2048 / threads);
  const int64_t cus = std::max(1, caps_of(s).num_compute_units);
  return unsigned(std::max<int64_t>(1, std::min(work_blocks, cus * per_cu)));
}

}  // namespace portllm::gpu
