// Activation quantization for W8A8 FP8 GEMMs (fp8_quant.cu): per token and per 128-wide K group,
// x -> e4m3 with one f32 scale, the DeepSeek-V3 activation format.
#pragma once
#include <cstdint>

#include "backend/device.h"
#include "core/dtype.h"

namespace portllm::gpu {

constexpr int kFp8QuantGroup = 128;  // K elements that share one activation scale

// x [M, K] (f32/bf16/f16, row stride x_ld, K % 128 == 0) -> q [rows, K] e4m3 (row stride K) and
// scales with q[m, k] * scales[k / 128 * rows + m] ~= x[m, k]. The scales are stored group-major
// (all rows of group 0, then group 1, ...): the M-major "VEC128_32F" operand layout of cuBLASLt's
// block-scaled GEMM. rows >= M pads the GEMM's token dimension (cuBLASLt wants it a multiple of
// 4): rows M..rows-1 are written as zeros with scale 1.
// Per group: amax = max |x|, scale = max(amax, 1e-10) / 448, q = e4m3(x / scale) rounded to
// nearest even and saturated to +-448.
void launch_fp8_quant_groups(const void* x, DType x_t, int64_t x_ld, int64_t M, int64_t K, int64_t rows,
                             uint8_t* q, float* scales, Stream& s);

// dst[r, c] = src[r * src_ld + c] for c < cols and 0 for cols <= c < dst_ld, r < rows (f32): a
// weight's block-scale rows widened to the row length cuBLASLt's 128x128 scale mode reads.
void launch_pad_scale_rows(float* dst, int64_t dst_ld, const float* src, int64_t src_ld, int64_t rows, int64_t cols,
                           Stream& s);

}  // namespace portllm::gpu
