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

template <class T, int N>
__device__ __forceinline__ void load_vec(const T* p, float* f) {
  if constexpr (N == 1) {
    f[0] = ld(p, 0);
  } else if constexpr (std::is_same_v<T, float>) {
    static_assert(N == 2 || N % 4 == 0, "f32 vectors are 8 bytes or whole 16-byte accesses");
    if constexpr (N == 2) {
      const float2 v = *reinterpret_cast<const float2*>(p);
      f[0] = v.x;
      f[1] = v.y;
    } else {
#pragma unroll
      for (int i = 0; i < N / 4; ++i) {
        const float4 v = reinterpret_cast<const float4*>(p)[i];
        f[4 * i] = v.x;
        f[4 * i + 1] = v.y;
        f[4 * i + 2] = v.z;
        f[4 * i + 3] = v.w;
      }
    }
  } else if constexpr (sizeof(T) == 1) {
    static_assert(N == 4 || N == 8 || N % 16 == 0, "fp8 vectors are 4 or 8 bytes or whole 16-byte accesses");
    uint32_t w[N / 4];
    if constexpr (N == 4) {
      w[0] = *reinterpret_cast<const uint32_t*>(p);
    } else if constexpr (N == 8) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      w[0] = v.x;
      w[1] = v.y;
    } else {
#pragma unroll
      for (int i = 0; i < N / 16; ++i) {
        const uint4 v = reinterpret_cast<const uint4*>(p)[i];
        w[4 * i] = v.x;
        w[4 * i + 1] = v.y;
        w[4 * i + 2] = v.z;
        w[4 * i + 3] = v.w;
      }
    }
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = f8e4m3_to_f32(uint8_t(w[i / 4] >> (8 * (i % 4))));
  } else {
    static_assert(sizeof(T) == 2 && (N == 4 || N % 8 == 0), "16-bit vectors are 8 bytes or whole 16-byte accesses");
    if constexpr (N == 4) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      unpack2<T>(v.x, f);
      unpack2<T>(v.y, f + 2);
    } else {
#pragma unroll
      for (int i = 0; i < N / 8; ++i) unpack8<T>(reinterpret_cast<const uint4*>(p)[i], f + 8 * i);
    }
  }
}

template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const float* f) {
  if constexpr (N == 1) {
    p[0] = cvt<T>(f[0]);
  } else if constexpr (std::is_same_v<T, float>) {
    static_assert(N == 2 || N % 4 == 0, "f32 vectors are 8 bytes or whole 16-byte accesses");
    if constexpr (N == 2) {
      *reinterpret_cast<float2*>(p) = make_float2(f[0], f[1]);
    } else {
#pragma unroll
      for (int i = 0; i < N / 4; ++i)
        reinterpret_cast<float4*>(p)[i] = make_float4(f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3]);
    }
  } else if constexpr (sizeof(T) == 1) {
    static_assert(N == 4 || N == 8 || N % 16 == 0, "fp8 vectors are 4 or 8 bytes or whole 16-byte accesses");
    uint32_t w[N / 4];
#pragma unroll
    for (int i = 0; i < N / 4; ++i)
      w[i] = uint32_t(cvt<T>(f[4 * i]).bits) | uint32_t(cvt<T>(f[4 * i + 1]).bits) << 8 |
             uint32_t(cvt<T>(f[4 * i + 2]).bits) << 16 | uint32_t(cvt<T>(f[4 * i + 3]).bits) << 24;
    if constexpr (N == 4) {
      *reinterpret_cast<uint32_t*>(p) = w[0];
    } else if constexpr (N == 8) {
      *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    } else {
#pragma unroll
      for (int i = 0; i < N / 16; ++i)
        reinterpret_cast<uint4*>(p)[i] = make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
    }
  } else {
    static_assert(sizeof(T) == 2 && (N == 4 || N % 8 == 0), "16-bit vectors are 8 bytes or whole 16-byte accesses");
    if constexpr (N == 4) {
      *reinterpret_cast<uint2*>(p) = make_uint2(pack2<T>(f[0], f[1]), pack2<T>(f[2], f[3]));
    } else {
#pragma unroll
      for (int i = 0; i < N / 8; ++i) {
        const float* g = f + 8 * i;
        reinterpret_cast<uint4*>(p)[i] =
            make_uint4(pack2<T>(g[0], g[1]), pack2<T>(g[2], g[3]), pack2<T>(g[4], g[5]), pack2<T>(g[6], g[7]));
      }
    }
  }
}

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
