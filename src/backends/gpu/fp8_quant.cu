// Per-token, per-128-group activation quantization to e4m3 (see fp8_quant.h for the layout).
// Portable CUDA C++ (no fp8 header, no PTX): the encoder below is plain integer/float code, so MUSA
// builds it unchanged; only the GEMM that consumes its output (matmul_fp8_w8a8.cpp) is NVIDIA-only.
//
// One warp per (row, group): each lane holds 128 / kWarpSize consecutive values (4 on 32-wide
// warps, 1 on MUSA's 128-wide ones), the warp reduces the amax with shuffles, and each lane writes
// its codes. Groups are numbered row-major so consecutive warps read consecutive memory.
#include <algorithm>
#include <cstring>

#include "backends/gpu/fp8_quant.h"
#include "backends/gpu/kernel_common.cuh"

namespace portllm::gpu {

namespace {
constexpr float kE4m3Max = 448.f;
// Floor of a group's amax: keeps the scale a normal f32 (and finite 1/scale) for all-zero or
// denormal groups; such groups quantize to zeros either way.
constexpr float kMinAmax = 1e-10f;
constexpr int kPerLane = kFp8QuantGroup / kWarpSize;
static_assert(kFp8QuantGroup % kWarpSize == 0, "a 128-group must split evenly over the warp");
constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;

// f32 -> e4m3fn code, round to nearest even, saturating to +-448 (NaN stays NaN). Same rounding as
// the host's core/dtype.h f32_to_f8e4m3, which instead maps values past 464 to NaN: here the
// inputs are already scaled into [-448, 448] and saturation only guards division round-off.
__device__ __forceinline__ uint8_t f32_to_e4m3_sat(float f) {
  uint32_t u = __float_as_uint(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return uint8_t(sign | 0x7fu);    // NaN
  if (u >= 0x43e00000u) return uint8_t(sign | 0x7eu);   // >= 448 (and Inf): the largest finite code
  if (u < (121u << 23)) {                               // below 2^-6: subnormal codes, step 2^-9
    // Adding 2^14 (ulp 2^-9) rounds to the nearest subnormal step; the low bits are the code.
    const uint32_t r = __float_as_uint(__uint_as_float(u) + 16384.f) - 0x46800000u;
    return uint8_t(sign | r);
  }
  // Normal: rebias the exponent (127 -> 7) and round the mantissa to 3 bits, ties to even.
  u += (uint32_t(7 - 127) << 23) + 0x7ffffu + ((u >> 20) & 1u);
  return uint8_t(sign | (u >> 20));
}

template <class T>
__global__ void fp8_quant_groups_kernel(const T* __restrict__ x, int64_t x_ld, int64_t M, int64_t K, int64_t rows,
                                        uint8_t* __restrict__ q, float* __restrict__ scales) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t groups_per_row = K / kFp8QuantGroup;
  const int64_t total = rows * groups_per_row;
  const int64_t warp_stride = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t g = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; g < total; g += warp_stride) {
    const int64_t m = g / groups_per_row, kb = g % groups_per_row;
    const int64_t k0 = kb * kFp8QuantGroup + lane * kPerLane;
    float v[kPerLane];
    float amax = 0.f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      v[i] = m < M ? ld(x, m * x_ld + k0 + i) : 0.f;  // padding rows are zeros
      amax = fmaxf(amax, fabsf(v[i]));
    }
    amax = warp_max(amax);
    const float scale = fmaxf(amax, kMinAmax) / kE4m3Max;
    uint8_t* out = q + m * K + k0;
    if constexpr (kPerLane == 4) {
      // One 4-byte store per lane (k0 is a multiple of 4 and q rows are K % 128 == 0 bytes long).
      uint32_t packed = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) packed |= uint32_t(f32_to_e4m3_sat(v[i] / scale)) << (8 * i);
      *reinterpret_cast<uint32_t*>(out) = packed;
    } else {
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) out[i] = f32_to_e4m3_sat(v[i] / scale);
    }
    if (lane == 0) scales[kb * rows + m] = m < M ? scale : 1.f;
  }
}
__global__ void pad_scale_rows_kernel(float* dst, int64_t dst_ld, const float* src, int64_t src_ld, int64_t rows,
                                      int64_t cols) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * dst_ld) return;
  const int64_t r = i / dst_ld, c = i % dst_ld;
  dst[i] = c < cols ? src[r * src_ld + c] : 0.f;
}
}  // namespace

void launch_pad_scale_rows(float* dst, int64_t dst_ld, const float* src, int64_t src_ld, int64_t rows, int64_t cols,
                           Stream& s) {
  const int64_t n = rows * dst_ld;
  if (n == 0) return;
  pad_scale_rows_kernel<<<unsigned((n + 255) / 256), 256, 0, native_stream(s)>>>(dst, dst_ld, src, src_ld, rows, cols);
  check_launch("pad_scale_rows");
}

void launch_fp8_quant_groups(const void* x, DType x_t, int64_t x_ld, int64_t M, int64_t K, int64_t rows,
                             uint8_t* q, float* scales, Stream& s) {
  if (K % kFp8QuantGroup != 0) fail("fp8 activation quantization: K must be a multiple of 128");
  if (rows < M) fail("fp8 activation quantization: fewer output rows than input rows");
  if (rows * K == 0) return;
  const int64_t groups = rows * (K / kFp8QuantGroup);
  // Enough blocks to fill any current GPU several times over; the grid-stride loop covers the rest.
  const unsigned grid = unsigned(std::min<int64_t>((groups + kWarpsPerBlock - 1) / kWarpsPerBlock, 65535 * 4));
  dispatch_float(x_t, [&](auto tx) {
    using TX = typename decltype(tx)::type;
    fp8_quant_groups_kernel<TX><<<grid, kThreads, 0, native_stream(s)>>>(static_cast<const TX*>(x), x_ld, M, K, rows,
                                                                         q, scales);
  });
  check_launch("fp8_quant_groups");
}

}  // namespace portllm::gpu
