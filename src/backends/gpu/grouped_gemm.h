// The tiled (grouped) GEMM of moe_gemm.cu, shared by MOE_GEMM and MATMUL_FP8_BLOCK:
// out[r, n] = sum_k x[r, k] * W[e(r)][n, k] (* fp8 block scale) (+ bias[n]), f32 accumulation.
// With expert_offsets, rows [off[e], off[e+1]) use expert e's weights and rows >= off[E] are not
// written; the offsets stay on the device (no host sync). Without, every row uses W[0].
#pragma once
#include <cstdint>
#include <memory>

#include <string>

#include "backend/device.h"
#include "backends/gpu/gpu_runtime.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace portllm {
struct MoeGemmArgs;
struct KernelInfo;
}

namespace portllm::gpu {

struct GroupedGemmParams {
  void* out = nullptr;
  DType out_t = DType::F32;
  int64_t out_ld = 0;
  const void* x = nullptr;
  DType x_t = DType::F32;
  int64_t x_ld = 0;
  const void* w = nullptr;  // [E][N, K]: row stride w_ld, expert stride w_es (elements)
  DType w_t = DType::F32;   // f32 / bf16 / f16, or F8E4M3 with scale
  int64_t w_ld = 0, w_es = 0;
  const float* scale = nullptr;  // fp8: scale[e * s_es + (n / block_n) * s_s0 + (k / block_k) * s_s1]
  int64_t s_es = 0, s_s0 = 0, s_s1 = 0;
  int block_n = 1, block_k = 1;
  const float* bias = nullptr;  // f32 [N] or null
  int64_t rows = 0, N = 0, K = 0;
  const int32_t* expert_offsets = nullptr;  // [E + 1] on the device, or null: one group of all rows
  int num_experts = 1;
  bool l2_evict_first = true;  // the decode GEMV's weight loads (load_weight16); its launcher sets it
};

// Launches on s; x_t is f32/bf16/f16; out_t equals x_t, or is f32 for fp8 weights.
void launch_grouped_gemm(const GroupedGemmParams& p, Stream& s);

// The decode-sized sibling (moe_gemv.cu): a grouped GEMV that streams each group's weights once
// per tile of at most 8 rows. Correct for any size; it pays while rows per group are few.
void launch_grouped_gemv(const GroupedGemmParams& p, Stream& s);

// MOE_GEMM's arguments as grouped-GEMM parameters (checks the shapes; W [E, N, K] contiguous rows).
GroupedGemmParams moe_gemm_params(const MoeGemmArgs& a);
// The same without the shape check or the row source (out, x and the expert weights): what the
// gather mode shares with it.
GroupedGemmParams moe_gemm_io_params(const MoeGemmArgs& a, const char* who);

// Expert weights W [E, N, K] into a parameter struct with GroupedGemmParams' weight fields (w,
// w_ld, w_es and, for fp8, scale, s_es, s_s0, s_s1, block_n, block_k; a block size of 0 means the
// whole dim). fp8 weights need their f32 block scales [E, N / block_n, K / block_k]; `who` names
// the op in the error.
template <class P>
void set_expert_weights(P& p, const Tensor& w, const Tensor& w_scale, int block_n, int block_k, const char* who) {
  p.w = w.data;
  p.w_es = w.strides[0];
  p.w_ld = w.strides[1];
  if (w.dtype != DType::F8E4M3) return;
  if (!w_scale.defined() || w_scale.dtype != DType::F32 || w_scale.ndim != 3)
    fail((std::string(who) + ": fp8 weights need f32 scales [E, N / block_n, K / block_k]").c_str());
  p.scale = w_scale.ptr<float>();
  p.s_es = w_scale.strides[0];
  p.s_s0 = w_scale.strides[1];
  p.s_s1 = w_scale.strides[2];
  p.block_n = block_n > 0 ? block_n : int(w.size(1));
  p.block_k = block_k > 0 ? block_k : int(w.size(2) > 1 ? w.size(2) : 1);
}

// tile_start[E + 1] in scratch memory (stream-ordered): prefix sum of ceil(rows of expert e / bm).
std::shared_ptr<void> launch_tile_start(const int32_t* expert_offsets, int num_experts, int bm, Stream& s);
// Upper bound of row tiles over all groups (the grid size): min(R, (R + E (bm - 1)) / bm).
inline int64_t grouped_tile_bound(int64_t rows, int64_t num_experts, int bm) {
  const int64_t b = (rows + num_experts * (bm - 1)) / bm;
  return b < rows ? b : rows;
}

// The tensor-core (wmma) sibling of MOE_GEMM on NVIDIA (moe_gemm_wmma.cu); a no-op on MUSA.
void register_moe_gemm_wmma_kernels();
// The mma.sync + cp.async grouped GEMM on NVIDIA (moe_gemm_mma.cu); a no-op on MUSA.
void register_moe_gemm_mma_kernels();
// The block-FP8 W8A8 grouped GEMM on fp8 tensor cores (moe_gemm_w8a8_mma.cu); a no-op on MUSA.
void register_moe_gemm_w8a8_kernels();
// MOE_GEMM's decode kernel (moe_gemv.cu).
void register_moe_gemv_kernels();

// The MOE_GEMM kernel a kernel named `name` of `priority` hands a call it cannot take to: the
// highest-priority other kernel below it that supports the call on s's device. Fails if none.
const KernelInfo& next_moe_gemm_kernel(const MoeGemmArgs& a, Stream& s, const char* name, int priority);

// dst[n, k] (dtype dst_t, row stride dst_ld) = fp8 W[n, k] * scale[(n / block_n) * s_s0 + (k / block_k) * s_s1].
void launch_fp8_dequant(void* dst, DType dst_t, int64_t dst_ld, const void* w, int64_t w_ld, const float* scale,
                        int64_t s_s0, int64_t s_s1, int block_n, int block_k, int64_t N, int64_t K, Stream& s);

}  // namespace portllm::gpu
