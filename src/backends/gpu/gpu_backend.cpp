#include "backends/gpu/gpu_backend.h"

#include <cstdlib>

#include "backend/registry.h"
#include "backends/gpu/gpu_device.h"
#include "backends/gpu/gpu_kernels.h"
#include "core/error.h"

namespace portllm {

void register_gpu_backend() {
  static bool done = false;
  if (done) return;
  done = true;
  gpu::register_pointwise_kernels();
  gpu::register_matmul_kernels();
  gpu::register_matmul_lt_tuned_kernels();
  gpu::register_batched_matmul_kernels();
  gpu::register_gemv_kernels();
  gpu::register_gemv_preload_kernels();
  gpu::register_attention_kernels();
  gpu::register_qk_norm_rope_kv_write_kernels();
  gpu::register_moe_kernels();
  gpu::register_moe_gemm_kernels();
  gpu::register_matmul_fp8_kernels();
  gpu::register_matmul_fp8_w8a8_kernels();
  gpu::register_mla_kernels();
  gpu::register_gdn_kernels();
  gpu::register_attention_decode_kernels();
  gpu::register_attention_mma_kernels();
  gpu::register_attention_decode_mma_kernels();
  gpu::register_mla_mma_kernels();
  gpu::register_sampling_kernels();
  gpu::register_matmul_split_k_norm_kernels();
  gpu::register_token_feed_kernels();
#if defined(PORTLLM_GPU_MUSA)
  const char* name = "musa";
#else
  const char* name = "cuda";
#endif
  // Device selection: index N among the devices the vendor runtime exposes; the runtime itself
  // applies PORTLLM_GPU_VISIBLE_DEVICES_ENV (CUDA_VISIBLE_DEVICES / MUSA_VISIBLE_DEVICES).
  BackendRegistry::instance().add({name,
                                   [name](int index) -> std::shared_ptr<Device> {
                                     const int n = gpu::device_count();
                                     if (n == 0) {
                                       const char* vis = std::getenv(PORTLLM_GPU_VISIBLE_DEVICES_ENV);
                                       PL_THROW("--device {}: no {} GPU is usable here (no device or no driver{}{})",
                                                name, PORTLLM_GPU_VENDOR, vis ? "; " PORTLLM_GPU_VISIBLE_DEVICES_ENV "=" : "",
                                                vis ? vis : "");
                                     }
                                     return std::make_shared<gpu::GpuDevice>(index);
                                   },
                                   [] { return gpu::device_count(); }});
}

}  // namespace portllm
