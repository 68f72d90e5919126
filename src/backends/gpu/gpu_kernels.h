// Registration functions of the GPU kernel files (one per file), called by register_gpu_backend.
#pragma once
#include "core/tensor.h"

namespace portllm {
struct MatmulAddRmsNormArgs;
struct MlaAttentionArgs;
class Stream;
}  // namespace portllm

namespace portllm::gpu {

void register_pointwise_kernels();
void register_matmul_kernels();
void register_matmul_lt_tuned_kernels();  // matmul_lt_tuned.cpp: MATMUL at decode sizes, algorithm chosen by timing (cuBLASLt)
void register_batched_matmul_kernels();  // batched_matmul.cpp: BATCHED_MATMUL (strided-batched BLAS)
void register_gemv_kernels();
void register_gemv_preload_kernels();  // gemv_preload.cu: MATMUL at M = 1 with every weight in flight before the wait (NVIDIA only)
void register_attention_kernels();
void register_qk_norm_rope_kv_write_kernels();  // qk_norm_rope_kv_write.cu: q/k norm + RoPE + KV write, one launch
void register_moe_kernels();  // moe.cu: MoE routing, permute, combine
void register_moe_down_combine_kernels();  // moe_down_combine.cu: MOE_DOWN_COMBINE (called by register_moe_kernels)
void register_moe_gemm_kernels();  // moe_gemm.cu: MOE_GEMM (grouped tiled GEMM)
void register_matmul_fp8_kernels();  // matmul_fp8.cpp: MATMUL_FP8_BLOCK
void register_matmul_fp8_w8a8_kernels();  // matmul_fp8_w8a8.cpp: MATMUL_FP8_BLOCK on fp8 units (cuBLASLt)
void register_mla_kernels();  // mla_attention.cu
void register_mla_mma_kernels();  // mla_attention_mma.cu: MLA_ATTENTION decode on tensor cores (NVIDIA only)
void register_gdn_kernels();  // gdn.cu: GDN conv + delta rule, gated RMSNorm, sigmoid gate
void register_attention_decode_kernels();
void register_attention_mma_kernels();
void register_attention_decode_mma_kernels();
void register_sampling_kernels();  // sampling.cu: SAMPLE
void register_matmul_split_k_norm_kernels();  // matmul_split_k_norm.cpp: MATMUL_ADD_RMS_NORM at decode batches (NVIDIA)
void register_token_feed_kernels();  // token_feed.cu: TOKEN_FEED (decode-step inputs)

// The portable MLA_ATTENTION launcher (mla_attention.cu); the tensor-core decode kernel falls back to it.
void mla_attention_portable(const MlaAttentionArgs& a, Stream& s);

// Rows view of a 2-D or 3-D tensor whose last dim is contiguous (see kernel_common.cuh Rows).
struct RowsDesc { int64_t n1, s0, s1; };
RowsDesc rows_of(const Tensor& t);

// Conversions and bias broadcast used by the matmul host code (pointwise.cu).
void launch_convert(void* dst, DType dst_t, const void* src, DType src_t, int64_t rows, int64_t cols,
                    int64_t dst_ld, int64_t src_ld, void* stream);
void launch_bias_fill(void* out, DType out_t, int64_t out_ld, const void* bias, DType bias_t, int64_t rows,
                      int64_t cols, void* stream);
// MATMUL_ADD_RMS_NORM's norm after a split-K GEMM (split_k_norm.cu): adds the `splits` f32
// partial products [splits, M, N] at `partials` (and the bias) into the residual and writes h.
// bf16/f16 activations, rows of N % 8 == 0 values up to kSplitKNormMaxWidth, 16-byte aligned rows,
// 2 to kSplitKNormMaxSplits slices.
constexpr int64_t kSplitKNormMaxWidth = 8192;
constexpr int kSplitKNormMaxSplits = 4;
void launch_split_k_add_rms_norm(const MatmulAddRmsNormArgs& a, const float* partials, int splits, Stream& s);
// Reads `bytes` of buf (larger than the L2 cache) so the next kernel's operands come from memory
// (l2_flush.cu; kernel timing).
void launch_l2_flush(void* buf, size_t bytes, void* stream);

}  // namespace portllm::gpu
