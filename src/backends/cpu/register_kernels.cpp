#include "backends/cpu/cpu_kernels.h"

namespace portllm::cpu {

void register_cpu_kernels() {
  register_matmul_kernels();
  register_attention_kernels();
  register_pointwise_kernels();
  register_hybrid_kernels();
  register_moe_kernels();
  register_mla_kernels();
  register_matmul_fp8_kernels();
  register_sample_kernels();
}

}  // namespace portllm::cpu
